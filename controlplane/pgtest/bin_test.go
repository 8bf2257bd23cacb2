package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestFindBinUnderPicksHighestVersion(t *testing.T) {
	root := t.TempDir()
	mk := func(ver string, names ...string) {
		dir := filepath.Join(root, ver, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := []string{"initdb", "postgres", "pg_basebackup"}
	mk("9.6", all...)
	mk("15", all...)
	mk("13", all...)
	mk("17", "initdb", "postgres") // incomplete: no pg_basebackup
	mk("notaversion", all...)
	got, err := findBinUnder(filepath.Join(root, "*", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "15", "bin"); got != want {
		t.Fatalf("picked %s, want %s", got, want)
	}

	_, err = findBinUnder(filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("no binaries: %v, want the install hint", err)
	}
}

// fatalRecorder is a testing.TB whose Fatal and Skip are recorded instead of
// ending the real test.
type fatalRecorder struct {
	testing.TB
	fatal, skipped bool
	msg            string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatal(args ...any) {
	r.fatal, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *fatalRecorder) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }
func (r *fatalRecorder) Skip(...any)                       { r.skipped = true; runtime.Goexit() }
func (r *fatalRecorder) SkipNow()                          { r.skipped = true; runtime.Goexit() }
func (r *fatalRecorder) Skipf(string, ...any)              { r.skipped = true; runtime.Goexit() }

// Without server binaries a test fails loudly with an install hint; it never
// skips.
func TestMissingPostgresFailsNotSkips(t *testing.T) {
	t.Setenv("QL3_PG_BIN", t.TempDir())
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewCluster(rec)
	}()
	<-done
	if rec.skipped || !rec.fatal {
		t.Fatalf("skipped=%v fatal=%v: a missing server must fail the test", rec.skipped, rec.fatal)
	}
	if !strings.Contains(rec.msg, "apt-get install postgresql") || !strings.Contains(rec.msg, "QL3_PG_BIN") {
		t.Fatalf("message %q does not say how to fix it", rec.msg)
	}
}
