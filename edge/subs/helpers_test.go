package subs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/subfetch/gittest"
)

// repo is a git repository made by the test (subfetch/gittest).
type repo = gittest.Repo

func newRepo(t *testing.T) *repo { return gittest.New(t) }

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
