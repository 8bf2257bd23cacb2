package subs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listAll lists every path under dir.
func listAll(t *testing.T, dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func TestHostileRepositories(t *testing.T) {
	r := newRepo(t)
	r.Write(map[string]string{"ok.js": "// cron: 1 1 * * *\n", "README.md": "x"})
	first := r.Commit("good")
	e := newEnv(t)
	sub := e.subscribe(r.URL(), nil)
	if _, log, err := e.pull(sub); err != nil {
		t.Fatalf("good pull: %v\n%s", err, log)
	}
	outside := func() {
		t.Helper()
		for _, p := range listAll(t, filepath.Dir(e.root)) {
			if p != "." && p != "edge.db" && !strings.HasPrefix(p, "edge.db-") && !strings.HasPrefix(p, "scripts") && !strings.HasPrefix(p, "subs") {
				t.Errorf("written outside the scripts folder and the work folder: %s", p)
			}
		}
	}

	// Links and a submodule are skipped with their reason; the rest lands.
	r.Git("reset", "--quiet", "--hard", first)
	if err := os.Symlink("/etc", filepath.Join(r.Dir, "etc_link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(r.Dir, "passwd.js")); err != nil {
		t.Fatal(err)
	}
	r.Write(map[string]string{"big.js": strings.Repeat("x", 9<<20)})
	r.Git("add", "-A")
	r.Git("update-index", "--add", "--cacheinfo", "160000,"+first+",vendor/outside")
	r.Git("commit", "--quiet", "-m", "links, a submodule and a huge file")
	ch, log, err := e.pull(sub)
	if err != nil {
		t.Fatalf("pull with links: %v\n%s", err, log)
	}
	for _, want := range []string{"skipped etc_link: a symbolic link", "skipped passwd.js: a symbolic link",
		"skipped vendor/outside: a submodule", "skipped big.js: 9437184 bytes, the limit per file is 8388608"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, p := range []string{"etc_link", "passwd.js", "vendor", "big.js"} {
		if _, err := os.Lstat(filepath.Join(e.root, "repo", p)); !os.IsNotExist(err) {
			t.Errorf("%s was written: %v", p, err)
		}
	}
	if len(actions(ch)) != 0 {
		t.Errorf("plan %v", actions(ch))
	}

	// Refused whole: nothing of the tree is swapped in.
	for _, tc := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"dot-dot entry", func() { r.LiteralTree([2]string{"100644", ".."}, [2]string{"100644", "x.js"}) }, `entry ".." is refused`},
		{"dot-dot folder", func() { r.LiteralTree([2]string{"40000", ".."}) }, `entry "../passwd" is refused`},
		{"git folder", func() { r.LiteralTree([2]string{"40000", ".git"}) }, `entry ".git/passwd" is refused: a .git element`},
		{"ten thousand files", func() {
			r.Git("reset", "--quiet", "--hard", first)
			files := map[string]string{}
			for i := range 10000 {
				files[fmt.Sprintf("many/%02d/f%05d.js", i%100, i)] = "x"
			}
			r.Write(files)
			r.Commit("10,000 files")
		}, "holds more than 4000 files, the limit of a subscription"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			after := listAll(t, filepath.Join(e.root, "repo"))
			_, log, err := e.pull(sub)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.want, log)
			}
			if got := listAll(t, filepath.Join(e.root, "repo")); strings.Join(got, ",") != strings.Join(after, ",") {
				t.Errorf("tree changed by a refused pull: %v → %v", after, got)
			}
			if st, _ := filepath.Glob(filepath.Join(e.work, "repo", "stage-*")); len(st) != 0 {
				t.Errorf("stage left: %v", st)
			}
		})
	}
	outside()
}

// A pull whose git dies while the files stream out leaves the tree that
// was in place, whole; the next pull completes.
func TestKilledPullLeavesThePreviousTree(t *testing.T) {
	r := newRepo(t)
	r.Write(map[string]string{"a.js": "// cron: 1 1 * * *\n" + strings.Repeat("a", 5000)})
	r.Commit("one")
	e := newEnv(t)
	sub := e.subscribe(r.URL(), nil)
	if _, _, err := e.pull(sub); err != nil {
		t.Fatal(err)
	}
	r.Write(map[string]string{"a.js": "// cron: 2 2 * * *\n" + strings.Repeat("b", 5000), "b.js": strings.Repeat("c", 5000)})
	r.Commit("two")
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "git")
	script := "#!/bin/sh\nfor a; do if [ \"$a\" = cat-file ]; then \"" + git + "\" \"$@\" | head -c 3000; kill -9 $$; fi; done\nexec \"" + git + "\" \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s, _ := e.store.GetSubscription(context.Background(), sub.ID)
	_, err = Pull(context.Background(), PullJob{ScriptsRoot: e.root, WorkDir: e.work, Slug: "repo", Source: SourceOf(s), Git: wrapper}, &log)
	if err == nil {
		t.Fatalf("a killed git succeeded:\n%s", log.String())
	}
	b, _ := os.ReadFile(filepath.Join(e.root, "repo", "a.js"))
	if !strings.HasPrefix(string(b), "// cron: 1 1") || len(b) != 5019 {
		t.Fatalf("the tree in place changed: %d bytes %.20q", len(b), b)
	}
	if _, err := os.Stat(filepath.Join(e.root, "repo", "b.js")); !os.IsNotExist(err) {
		t.Fatalf("half a pull is visible: %v", err)
	}
	ch, _, err := e.pull(sub)
	if err != nil || actions(ch)["a.js"] != "update" {
		t.Fatalf("next pull: %v %v", actions(ch), err)
	}
}
