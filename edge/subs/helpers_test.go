package subs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/sqlite"
)

// repo is a git repository made by the test with the git program.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, dir: filepath.Join(t.TempDir(), "origin")}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("init", "--quiet", "--initial-branch=main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %v: %v: %s", args, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func (r *repo) write(files map[string]string) {
	r.t.Helper()
	for p, c := range files {
		full := filepath.Join(r.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *repo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "--quiet", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

func (r *repo) url() string { return "file://" + r.dir }

// env is a store, a scripts folder and a service over them.
type env struct {
	t     *testing.T
	store *sqlite.Store
	svc   *Service
	root  string
	work  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "edge.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, store: st, root: filepath.Join(dir, "scripts"), work: filepath.Join(dir, "subs")}
	if err := os.MkdirAll(e.root, 0o700); err != nil {
		t.Fatal(err)
	}
	e.svc = New(Config{Store: st, ScriptsRoot: e.root, WorkDir: e.work, Exe: "/usr/bin/ql3-edge"})
	return e
}

func (e *env) subscribe(url string, mod func(*edge.NewSubscription)) edge.Subscription {
	e.t.Helper()
	in := edge.NewSubscription{Name: "repo", Slug: "repo", Kind: edge.SubscriptionGit, URL: url, Branch: "main",
		AutoAdd: true, AutoRemove: true, Enabled: true, Filter: subplan.Filter{Extensions: []string{".js", ".py", ".sh"}}}
	if mod != nil {
		mod(&in)
	}
	sub, err := e.svc.Create(context.Background(), in, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return sub
}

// pull runs what the system task's process runs, then applies the plan
// as the server does when the process reports the swapped tree.
func (e *env) pull(sub edge.Subscription) ([]subplan.Change, string, error) {
	e.t.Helper()
	ctx := context.Background()
	sub, err := e.store.GetSubscription(ctx, sub.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	var log bytes.Buffer
	st, err := Pull(ctx, PullJob{ScriptsRoot: e.root, WorkDir: e.work, Slug: sub.Slug, Source: SourceOf(sub)}, &log)
	if err != nil {
		return nil, log.String(), err
	}
	ch, err := e.svc.Apply(ctx, sub, st.Commit, 1, "run:test")
	return ch, log.String(), err
}

// actions maps path → action of the mutating and diverged changes.
func actions(ch []subplan.Change) map[string]string {
	out := map[string]string{}
	for _, c := range ch {
		if c.Mutates() || c.Action == subplan.Diverged {
			out[c.Path] = c.Action
		}
	}
	return out
}
