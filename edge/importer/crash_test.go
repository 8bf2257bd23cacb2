package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// The crash helper: the test binary re-run with these variables applies
// a plan and kills itself with SIGKILL at a named point of Apply.
const (
	envCrashAt   = "QL3_TEST_IMPORT_CRASH_AT"
	envCrashEdge = "QL3_TEST_IMPORT_EDGE"
	envCrashFrom = "QL3_TEST_IMPORT_FROM"
	envCrashPlan = "QL3_TEST_IMPORT_PLAN"
)

func TestMain(m *testing.M) {
	if point := os.Getenv(envCrashAt); point != "" {
		os.Exit(crashHelper(point))
	}
	os.Exit(m.Run())
}

func crashHelper(point string) int {
	t := &testing.T{}
	e := openEdge(t, os.Getenv(envCrashEdge))
	e.im.Hook = func(p string) {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal arrives
		}
	}
	_, err := e.im.Apply(context.Background(), os.Getenv(envCrashFrom), zone, os.Getenv(envCrashPlan), "crash")
	fmt.Fprintf(os.Stderr, "apply returned without reaching %s: %v\n", point, err)
	return 3
}

// TestKillDuringApply kills an apply at every named point (before the
// stage, with the stage durable, right after the commit, with the files
// moved but not yet marked), then: a re-run finishes with every record
// exactly once and the files in place; a crash before the commit left
// nothing visible, one after it left everything but the files, which
// the next start (Resume) also finishes.
func TestKillDuringApply(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		point     string
		committed bool
		resume    bool // finish with Resume (a restart) instead of a re-run
	}{
		{"staging", false, false}, {"staged", false, false}, {"committed", true, false},
		{"committed", true, true}, {"moved", true, false}, {"moved", true, true},
	} {
		t.Run(fmt.Sprintf("%s/resume=%v", tc.point, tc.resume), func(t *testing.T) {
			from := copyTree(t, fixture)
			dir := t.TempDir()
			p, _, err := Inspect(ctx, from, zone)
			if err != nil {
				t.Fatal(err)
			}
			// Create the key file and schema before the helper runs.
			first := openEdge(t, dir)
			first.store.Close()

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envCrashAt+"="+tc.point, envCrashEdge+"="+dir, envCrashFrom+"="+from, envCrashPlan+"="+p.Digest)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper did not die by SIGKILL at %s: %v\n%s", tc.point, err, out)
			}

			e := openEdge(t, dir)
			if tc.committed {
				rec, err := e.store.ImportRecord(ctx, p.Digest)
				if err != nil || !rec.FilesPending {
					t.Fatalf("after a crash at %s: ledger %+v %v", tc.point, rec, err)
				}
				assertCounts(t, e, fixtureTasks, fixtureEnvs)
			} else {
				assertCounts(t, e, 0, 0)
				if _, _, err := e.im.Folder.Read("jd_sign.js"); err == nil {
					t.Fatal("a file was copied before the commit")
				}
			}

			if tc.resume {
				if err := e.im.Resume(ctx, "start"); err != nil {
					t.Fatal(err)
				}
			} else {
				res, err := e.im.Apply(ctx, from, zone, p.Digest, "rerun")
				if err != nil {
					t.Fatal(err)
				}
				want := StatusApplied
				if tc.committed {
					want = StatusExisting
				}
				if res.Status != want {
					t.Fatalf("re-run: %s, want %s", res.Status, want)
				}
			}
			assertCounts(t, e, fixtureTasks, fixtureEnvs)
			if rec, err := e.store.ImportRecord(ctx, p.Digest); err != nil || rec.FilesPending {
				t.Fatalf("ledger after finishing: %+v %v", rec, err)
			}
			for _, f := range copiedFiles(p) {
				if _, etag, err := e.im.Folder.Read(f.Path); err != nil || etag != f.SHA256 {
					t.Errorf("scripts/%s: %v", f.Path, err)
				}
			}
			if n := countStaged(t, e); n != 0 {
				t.Errorf("%d staged files left", n)
			}
			if left, _ := filepath.Glob(filepath.Join(e.im.Folder.Root(), ".ql3-tmp-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
