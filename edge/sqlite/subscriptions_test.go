package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptmeta"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

func newSub(name, url string) edge.NewSubscription {
	return edge.NewSubscription{Name: name, Kind: edge.SubscriptionGit, URL: url, AutoAdd: true, AutoRemove: true, Enabled: true,
		Filter: subplan.Filter{Extensions: []string{".js", ".py"}}}
}

func TestSubscriptionRecords(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	sub, err := s.CreateSubscription(ctx, newSub("脚本库", "https://example.invalid/o/scripts.git"), "import")
	if err != nil {
		t.Fatal(err)
	}
	if sub.Slug != "scripts" || sub.RemoveMode != subplan.RemoveDisable || !sub.AutoAdd || sub.Filter.Extensions[1] != ".py" {
		t.Fatalf("created %+v", sub)
	}
	if _, err := s.CreateSubscription(ctx, newSub("other", "https://example.invalid/x/scripts"), "import"); errs.Code(err) != errs.Conflict {
		t.Fatalf("same folder twice: %v", err)
	}
	for _, bad := range []struct {
		field string
		in    edge.NewSubscription
	}{
		{"url", edge.NewSubscription{Name: "a", Kind: "git", URL: "https://u:secret@example.invalid/r.git"}},
		{"url", edge.NewSubscription{Name: "a", Kind: "git", URL: "-uhttps://x"}},
		{"branch", edge.NewSubscription{Name: "a", Kind: "git", URL: "https://h/r", Branch: "--upload-pack=x"}},
		{"kind", edge.NewSubscription{Name: "a", Kind: "svn", URL: "https://h/r"}},
		{"schedule", edge.NewSubscription{Name: "a", Kind: "git", URL: "https://h/r", Schedule: "61 * * * *"}},
		{"credentialKind", edge.NewSubscription{Name: "a", Kind: "git", URL: "https://h/r", Credential: "GH_TOKEN"}},
		{"filter.include", edge.NewSubscription{Name: "a", Kind: "git", URL: "https://h/r", Filter: subplan.Filter{Include: []string{"["}}}},
		{"proxy", edge.NewSubscription{Name: "a", Kind: "git", URL: "https://h/r", Proxy: "ftp://p"}},
	} {
		if _, err := s.CreateSubscription(ctx, bad.in, "t"); errs.Field(err) != bad.field {
			t.Errorf("%+v: field %q, err %v", bad.in, errs.Field(err), err)
		}
	}
	list, err := s.ListSubscriptions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != sub.ID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	d, err := s.CreateDependency(ctx, edge.NewDependency{Kind: edge.DependencyNode, Name: "axios", Version: "^1.6.0"}, "import")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDependency(ctx, edge.NewDependency{Kind: edge.DependencyNode, Name: "axios"}, "import"); errs.Code(err) != errs.Conflict {
		t.Fatalf("twice: %v", err)
	}
	for _, bad := range []edge.NewDependency{{Kind: "node", Name: "--global"}, {Kind: "python", Name: "a;rm"},
		{Kind: "linux", Name: "curl", Version: "1 2"}, {Kind: "ruby", Name: "x"}} {
		if _, err := s.CreateDependency(ctx, bad, "t"); errs.Code(err) != errs.Invalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	deps, err := s.ListDependencies(ctx, edge.DependencyNode)
	if err != nil || len(deps) != 1 || deps[0].ID != d.ID || deps[0].Version != "^1.6.0" {
		t.Fatalf("deps = %+v, %v", deps, err)
	}
	if d, err = s.RecordDependencyAction(ctx, d.ID, "task1", edge.DepInstall, "run1", "t"); err != nil || d.LastRunID != "run1" {
		t.Fatalf("record: %+v %v", d, err)
	}
	if _, err := s.SetDependencySettings(ctx, edge.DependencySettings{Kind: "node", Registry: "https://registry.npmmirror.com"}, "t"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.GetDependencySettings(ctx, "node"); err != nil || st.Registry != "https://registry.npmmirror.com" {
		t.Fatalf("settings %+v %v", st, err)
	}
}

// A plan applied twice changes nothing the second time; a task a person
// renamed is diverged, and a removed script's task is disabled.
func TestApplySubscriptionPlan(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	sub, err := s.CreateSubscription(ctx, newSub("repo", "file:///srv/repo.git"), "t")
	if err != nil {
		t.Fatal(err)
	}
	mustTask(t, s, "京豆", shellSpec("true")) // a name already taken
	scripts := []subplan.Script{
		{Path: "a.js", Header: scriptmeta.Parse("a.js", []byte("// cron: 5 8 * * *\nnew Env('京豆')"))},
		{Path: "b.py", Header: scriptmeta.Parse("b.py", []byte("# cron: 0 0 * * *\n"))},
	}
	plan := func(sc []subplan.Script) []subplan.Change {
		t.Helper()
		tasks, err := s.SubscriptionPlanTasks(ctx, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := subplan.Plan(sc, tasks, subplan.Options{AutoAdd: true, AutoRemove: true})
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	apply := func(ch []subplan.Change) []subplan.Change {
		t.Helper()
		out, err := s.ApplySubscriptionPlan(ctx, edge.SubscriptionApply{SubscriptionID: sub.ID, Changes: ch, Commit: "c1", Actor: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := apply(plan(scripts))
	if len(out) != 2 || out[0].Action != subplan.Add || out[1].Action != subplan.Add {
		t.Fatalf("first apply %+v", out)
	}
	a, err := s.GetTask(ctx, out[0].TaskID)
	if err != nil || a.Name != "京豆 (repo/a.js)" || a.Spec.Script.File != "repo/a.js" || a.Labels[0] != "sub:repo" {
		t.Fatalf("task a = %+v, %v", a, err)
	}
	for _, c := range plan(scripts) {
		if c.Mutates() {
			t.Fatalf("second plan not empty: %+v", c)
		}
	}
	// A person renames b; the script's cron changes and a disappears.
	b := out[1].TaskID
	bt, _ := s.GetTask(ctx, b)
	if _, err := s.UpdateTask(ctx, b, bt.Revision, edge.TaskUpdate{Name: "mine", Spec: bt.Spec}); err != nil {
		t.Fatal(err)
	}
	scripts = []subplan.Script{{Path: "b.py", Header: scriptmeta.Parse("b.py", []byte("# cron: 1 1 * * *\n"))}}
	got := apply(plan(scripts))
	want := map[string]string{"a.js": subplan.Disable, "b.py": subplan.Diverged}
	for _, c := range got {
		if want[c.Path] != c.Action {
			t.Errorf("%s: %s, want %s", c.Path, c.Action, want[c.Path])
		}
	}
	if a, _ := s.GetTask(ctx, out[0].TaskID); a.Enabled {
		t.Error("a not disabled")
	}
	audit, _ := s.ListAudit(ctx, 0, 200)
	n := 0
	for _, l := range audit {
		if strings.HasPrefix(l.Action, "subscription.task_") && strings.Contains(l.Detail, "origin=subscription:"+sub.ID) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("audited task changes = %d, want 3", n)
	}
}
