package subfetch_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/subfetch"
	"github.com/ql3/ql3/subfetch/gittest"
)

func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := subfetch.WalkTree(dir, 1<<20, func(p string, exec bool, data []byte) error {
		if exec {
			p += "*"
		}
		out[p] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStageChecksTheTree: a staged tree holds exactly the repository's
// regular files (executable bits kept); links and oversized files are
// skipped with their reasons; a ".." or ".git" entry refuses the whole
// tree and leaves no stage behind; Scan reads the cron comments.
func TestStageChecksTheTree(t *testing.T) {
	r := gittest.New(t)
	r.Write(map[string]string{"README.md": "hi\n", "a/job.js": "// cron: 5 8 * * *\n// new Env('Job')\n", "big.js": strings.Repeat("x", 2000)})
	if err := os.Symlink("/etc", filepath.Join(r.Dir, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Commit("first")
	work := t.TempDir()
	var log bytes.Buffer
	s := &subfetch.Stager{WorkDir: work, Limits: subfetch.Limits{MaxFileBytes: 1000}, Log: &log}
	st, err := s.Stage(context.Background(), "repo", "stage", subfetch.Source{Kind: subdef.Git, URL: r.URL(), Branch: "main"})
	if err != nil {
		t.Fatalf("stage: %v\n%s", err, log.String())
	}
	got := tree(t, st.Dir)
	want := map[string]string{"README.md": "hi\n", "a/job.js": "// cron: 5 8 * * *\n// new Env('Job')\n", "run.sh*": "#!/bin/sh\n"}
	if len(got) != len(want) {
		t.Fatalf("staged %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("staged %v, want %v", got, want)
		}
	}
	reasons := map[string]string{}
	for _, k := range st.Skipped {
		reasons[k.Path] = k.Reason
	}
	if !strings.Contains(reasons["etc"], "symbolic link") || !strings.Contains(reasons["big.js"], "limit per file") {
		t.Fatalf("skipped %+v", st.Skipped)
	}
	if !strings.Contains(log.String(), "skipped etc: a symbolic link") {
		t.Fatalf("log:\n%s", log.String())
	}
	scripts, err := subfetch.Scan(st.Dir, subplan.Filter{Extensions: []string{".js"}})
	if err != nil || len(scripts) != 1 || scripts[0].Header.Cron != "5 8 * * *" || scripts[0].Header.Name != "Job" {
		t.Fatalf("scan: %+v %v", scripts, err)
	}
	if err := st.Discard(); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][2]string{{"100644", ".."}, {"40000", ".git"}} {
		r.LiteralTree([2]string{"100644", "ok.js"}, bad)
		_, err := s.Stage(context.Background(), "repo", "stage", subfetch.Source{Kind: subdef.Git, URL: r.URL(), Branch: "main"})
		if err == nil || !strings.Contains(err.Error(), "is refused") {
			t.Fatalf("entry %q: %v", bad[1], err)
		}
		if left, _ := filepath.Glob(filepath.Join(work, "repo", "stage-*")); len(left) != 0 {
			t.Fatalf("a refused stage left %v", left)
		}
	}
}
