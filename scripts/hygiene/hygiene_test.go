// Package hygiene holds repository-level checks: what the checkout tracks
// and what the Makefile's entry points build.
package hygiene

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the workspace root (the directory with go.work).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err != nil {
		t.Fatalf("workspace root not found at %s: %v", dir, err)
	}
	return dir
}

func gitOutput(t *testing.T, root string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v (this check needs a git checkout)", strings.Join(args, " "), err)
	}
	return out
}

// executableMagic is the start of every native executable format a Go build
// can write (ELF, Mach-O 32/64 both byte orders, PE).
var executableMagic = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
	{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe},
	{'M', 'Z'},
}

func isExecutable(head []byte) bool {
	for _, m := range executableMagic {
		if bytes.HasPrefix(head, m) {
			return true
		}
	}
	return false
}

// TestNoTrackedBinaries fails when the repository tracks a compiled
// executable: build outputs go to bin/ and dist/, never into a commit.
func TestNoTrackedBinaries(t *testing.T) {
	root := repoRoot(t)
	files := bytes.Split(gitOutput(t, root, "ls-files", "-z"), []byte{0})
	for _, f := range files {
		if len(f) == 0 {
			continue
		}
		path := filepath.Join(root, string(f))
		fh, err := os.Open(path)
		if err != nil {
			continue // deleted in the work tree; git status shows it
		}
		head := make([]byte, 4)
		n, _ := fh.Read(head)
		fh.Close()
		if isExecutable(head[:n]) {
			t.Errorf("%s is a compiled executable tracked by git; remove it (build outputs are ignored)", f)
		}
	}
}

// TestBuildOutputsIgnored: every place `go build` or the Makefile writes a
// binary is in .gitignore, so `git add -A` cannot pick one up again.
func TestBuildOutputsIgnored(t *testing.T) {
	root := repoRoot(t)
	for _, p := range []string{
		"bin/ql3-edge", "dist/ql3-worker-linux-arm64",
		"edge/ql3-edge", "controlplane/ql3-control", "worker/ql3-worker",
		"edge/cmd/ql3-edge/ql3-edge", "controlplane/cmd/ql3-control/ql3-control", "worker/cmd/ql3-worker/ql3-worker",
		"edge/httpapi/httpapi.test", "data/ql3.db",
	} {
		cmd := exec.Command("git", "-C", root, "check-ignore", "--no-index", "-q", p)
		if err := cmd.Run(); err != nil {
			t.Errorf("%s is not ignored by .gitignore", p)
		}
	}
	// The cmd directories share the binaries' names; their sources must stay visible.
	for _, p := range []string{"edge/cmd/ql3-edge/main.go", "controlplane/cmd/ql3-control/new.go", "worker/cmd/ql3-worker/main.go"} {
		cmd := exec.Command("git", "-C", root, "check-ignore", "--no-index", "-q", p)
		if err := cmd.Run(); err == nil {
			t.Errorf("%s is ignored by .gitignore, but it is source", p)
		}
	}
}

// TestMakeRunBuildsOnlyTheEdge: `make run` starts the edge, so it must not
// compile the control plane (pgx) or the worker first.
func TestMakeRunBuildsOnlyTheEdge(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("make", "-n", "-C", root, "run")
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	plan := string(out)
	if !strings.Contains(plan, "./cmd/ql3-edge") {
		t.Fatalf("make run does not build the edge:\n%s", plan)
	}
	for _, other := range []string{"cmd/ql3-control", "cmd/ql3-worker", "cd controlplane", "cd worker"} {
		if strings.Contains(plan, other) {
			t.Errorf("make run also builds %q:\n%s", other, plan)
		}
	}
}
