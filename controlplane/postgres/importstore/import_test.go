package importstore_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/importer"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/qlsource"
)

func TestApplyFixture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	from := copyTree(t, fixture)
	before := treeState(t, from)
	c := newCluster(t)

	p, src, err := importer.Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	// The subscriptions the edge creates, the cluster creates too.
	wantSubs := 0
	for _, s := range p.Subscriptions {
		if s.Created() {
			wantSubs++
		}
	}
	if wantSubs != fixtureSubs {
		t.Errorf("%d subscriptions created by the plan, want the edge's 1", wantSubs)
	}
	res, err := c.im.Apply(ctx, c.project, from, zone, p.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != controlplane.ImportApplied || res.Tasks != fixtureTasks || res.Envs != fixtureEnvs || res.Files != fixtureFiles ||
		res.Subs != wantSubs || res.Deps != fixtureDeps || len(res.Warnings) != 0 {
		t.Fatalf("result %+v", res)
	}
	if after := treeState(t, from); after != before {
		t.Fatalf("the source changed:\n%s\n---\n%s", before, after)
	}

	// Subscriptions: the record as planned, in the legacy zone, with its
	// pull task published after the commit on the subscription's schedule.
	subs, err := substore.New(c.admin).ListSubscriptions(ctx, c.project)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != wantSubs {
		t.Fatalf("%d subscriptions in the project, want %d", len(subs), wantSubs)
	}
	for _, sp := range p.Subscriptions {
		if !sp.Created() {
			continue
		}
		got := subs[0]
		if got.URL != sp.URL || got.Schedule != sp.Schedule || got.TimeZone != zone || got.Slug != sp.Folder || got.TaskID == "" {
			t.Errorf("subscription %d: %+v, plan %+v", sp.SourceID, got, sp)
			continue
		}
		trs, err := c.pub.ListTriggers(ctx, got.TaskID, controlplane.ListRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if sp.Schedule != "" && (len(trs.Items) != 1 || trs.Items[0].Expression != sp.Schedule || trs.Items[0].TimeZone != zone) {
			t.Errorf("subscription %d's pull task triggers: %+v", sp.SourceID, trs.Items)
		}
	}

	// Tasks: each created plan row is a task as mapped, a trigger per
	// schedule in the legacy zone; disabled stays disabled.
	page, err := c.pub.ListTasks(ctx, c.project, controlplane.ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]controlplane.Task{}
	for _, tk := range page.Items {
		if tk.ID != subs[0].TaskID { // the subscription's pull task, checked above
			byName[tk.Name] = tk
		}
	}
	if len(byName) != fixtureTasks {
		t.Fatalf("%d tasks", len(byName))
	}
	sign := byName["京东签到"]
	if sign.Spec.Script == nil || sign.Spec.Script.File != "jd_sign.js" || !slices.Equal(sign.Labels, []string{"京东", "daily"}) || !sign.Enabled {
		t.Errorf("京东签到: %+v", sign)
	}
	if d, ok := byName["disabled task"]; !ok || d.Enabled {
		t.Errorf("disabled task: %+v", d)
	}
	if l := byName["Legacy Crontab 3"]; l.Spec.Shell == nil || l.Spec.Shell.Shell != "/bin/bash" {
		t.Errorf("Legacy Crontab 3: %+v", l.Spec)
	}
	if m := byName["multi schedule"]; m.Spec.Concurrency != "allow" {
		t.Errorf("multi schedule concurrency %s", m.Spec.Concurrency)
	}
	if w := byName["with timeout"]; w.Spec.TimeoutMs != 300_000 {
		t.Errorf("with timeout: %d", w.Spec.TimeoutMs)
	}
	triggers := 0
	for _, tp := range p.Tasks {
		if !tp.Created() {
			continue
		}
		tk, ok := byName[tp.Name]
		if !ok {
			t.Fatalf("task %d %q not created", tp.SourceID, tp.Name)
		}
		trs, err := c.pub.ListTriggers(ctx, tk.ID, controlplane.ListRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var exprs []string
		for _, tr := range trs.Items {
			if tr.TimeZone != zone || tr.Enabled != tp.Enabled {
				t.Errorf("%s: trigger zone %s enabled %v", tk.Name, tr.TimeZone, tr.Enabled)
			}
			exprs = append(exprs, tr.Expression)
		}
		slices.Sort(exprs)
		want := slices.Clone(tp.Schedules)
		slices.Sort(want)
		if !slices.Equal(exprs, want) {
			t.Errorf("%s: triggers %v, want %v", tk.Name, exprs, want)
		}
		triggers += len(want)
	}
	triggers += fixtureSubs // the subscription's pull task's schedule, checked above

	checkJoined(t, c, p, src)

	// Files: in the project's scripts folder with their content.
	for _, f := range p.Files {
		if f.Dir || !f.Copied() {
			continue
		}
		_, etag, err := c.scripts.ReadScript(ctx, c.project, f.Path)
		if err != nil || etag != f.SHA256 {
			t.Errorf("scripts/%s: %v etag %s", f.Path, err, etag)
		}
	}
	if rec, err := c.store.ImportRecord(ctx, c.project, p.Digest); err != nil || rec.Zone != zone || len(rec.Rows) != fixtureTasks+fixtureEnvs+fixtureFiles+fixtureDeps+fixtureSubs {
		t.Errorf("ledger %+v %v", rec, err)
	}
	if n := c.count(t, `SELECT count(*) FROM ql3.audit_log WHERE action = 'import.apply' AND subject_id = $1::uuid::text`); n != 1 {
		t.Errorf("%d import.apply audit lines", n)
	}
	c.assertCounts(t, fixtureTasks+fixtureSubs, triggers, fixtureEnvs, fixtureFiles, 1)
	// Dependency records as planned, no install started.
	for _, d := range p.Dependencies {
		if !d.Created() {
			continue
		}
		var n int
		if err := c.admin.QueryRow(ctx, `SELECT count(*) FROM ql3.dependencies WHERE project_id = $1 AND kind = $2 AND name = $3 AND version = $4`,
			c.project, d.Kind, d.Name, d.Version).Scan(&n); err != nil || n != 1 {
			t.Errorf("dependency %s %s %s: %d records (%v)", d.Kind, d.Name, d.Version, n, err)
		}
	}
	if n := c.count(t, `SELECT count(*) FROM ql3.dependency_installs WHERE project_id = $1`); n != 0 {
		t.Errorf("%d installs started by the import", n)
	}

	// Replay: existing, nothing written.
	again, err := c.im.Apply(ctx, c.project, from, zone, p.Digest)
	if err != nil || again.Status != controlplane.ImportExisting || again.Tasks != fixtureTasks || again.Files != fixtureFiles {
		t.Fatalf("replay %+v %v", again, err)
	}
	c.assertCounts(t, fixtureTasks+fixtureSubs, triggers, fixtureEnvs, fixtureFiles, 1)
	if after := treeState(t, from); after != before {
		t.Fatal("the source changed during the replay")
	}
}

// checkJoined compares the joined values a task's process gets from the
// project's env store (core/env.Resolve and Compose, as the offer does)
// with the values QingLong exported, for every adopted name, and checks
// the variable in a real process.
func checkJoined(t *testing.T, c *cluster, p qlimport.Plan, src qlimport.Source) {
	t.Helper()
	entries, err := c.envs.ExportEnvs(context.Background(), c.project, true)
	if err != nil {
		t.Fatal(err)
	}
	vars, err := env.Resolve(entries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.Compose(vars, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := qlimport.JoinedValues(src.Envs)
	adopted := map[string]bool{}
	for _, ep := range p.Envs {
		if ep.Created() && ep.Enabled {
			adopted[ep.Name] = true
		}
	}
	if len(adopted) < 2 {
		t.Fatalf("only %d names adopted", len(adopted))
	}
	for name := range adopted {
		if got[name] != want[name] {
			t.Errorf("%s: ql3 exports %q, QingLong exported %q", name, got[name], want[name])
		}
	}
	for name := range got {
		if !adopted[name] {
			t.Errorf("%s is exported but no enabled row of it was adopted", name)
		}
	}
	if want["JD_COOKIE"] != "pt_key=CCC333;pt_pin=carol;&pt_key=EEE555;pt_pin=erin;&pt_key=AAA111;pt_pin=alice;&pt_key=BBB222;pt_pin=bob;" {
		t.Fatalf("the fixture's QingLong order changed: %q", want["JD_COOKIE"])
	}
	cmd := exec.Command("/bin/sh", "-c", `printf %s "$JD_COOKIE"`)
	for k, v := range got {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if err != nil || string(out) != want["JD_COOKIE"] {
		t.Errorf("the process saw %q (%v)", out, err)
	}
}

// TestChangedSourceRefused: a change of the source after inspect — a
// value the plan never shows, a script's content — refuses the apply and
// writes nothing.
func TestChangedSourceRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, change := range map[string]func(t *testing.T, from string){
		"env value": func(t *testing.T, from string) {
			db, err := sql.Open("sqlite", filepath.Join(from, qlsource.DBFile))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE Envs SET value = 'pt_key=NEW;' WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
		},
		"script": func(t *testing.T, from string) {
			if err := os.WriteFile(filepath.Join(from, "scripts", "utils.js"), []byte("changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			from := copyTree(t, fixture)
			c := newCluster(t)
			p, _, err := importer.Inspect(ctx, from, zone)
			if err != nil {
				t.Fatal(err)
			}
			change(t, from)
			_, err = c.im.Apply(ctx, c.project, from, zone, p.Digest)
			if errs.Code(err) != errs.Conflict || !strings.Contains(err.Error(), "source changed") {
				t.Fatalf("apply after a change: %v", err)
			}
			c.assertCounts(t, 0, 0, 0, 0, 0)
		})
	}
}

// TestDestinationClash: a scripts folder with another file at a path to
// copy refuses the apply before anything is written; the same content
// there is no clash.
func TestDestinationClash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	from := copyTree(t, fixture)
	c := newCluster(t)
	if _, err := c.scripts.WriteScript(ctx, c.project, "tool.ts", []byte("mine\n"), controlplane.ScriptPrecondition{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	p, _, err := importer.Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.im.Apply(ctx, c.project, from, zone, p.Digest)
	if errs.Code(err) != errs.Conflict || !strings.Contains(err.Error(), "tool.ts") {
		t.Fatalf("%v", err)
	}
	c.assertCounts(t, 0, 0, 0, 1, 0)

	// The same bytes at that path: not a clash, not written again.
	same, err := os.ReadFile(filepath.Join(from, "scripts", "tool.ts"))
	if err != nil {
		t.Fatal(err)
	}
	etag := ""
	for _, f := range p.Files {
		if f.Path == "tool.ts" {
			etag = f.SHA256
		}
	}
	if _, err := c.scripts.WriteScript(ctx, c.project, "tool.ts", same, controlplane.ScriptPrecondition{IfMatch: mustETag(t, c, "tool.ts")}); err != nil {
		t.Fatal(err)
	}
	if _, got, _ := c.scripts.ReadScript(ctx, c.project, "tool.ts"); got != etag {
		t.Fatalf("tool.ts etag %s, want %s", got, etag)
	}
	if res, err := c.im.Apply(ctx, c.project, from, zone, p.Digest); err != nil || res.Status != controlplane.ImportApplied {
		t.Fatalf("apply over identical content: %+v %v", res, err)
	}
}

func mustETag(t *testing.T, c *cluster, path string) string {
	t.Helper()
	_, etag, err := c.scripts.ReadScript(context.Background(), c.project, path)
	if err != nil {
		t.Fatal(err)
	}
	return etag
}

func TestInspectNeedsZone(t *testing.T) {
	t.Parallel()
	for _, z := range []string{"", "Local", "Mars/Base"} {
		if _, _, err := importer.Inspect(context.Background(), fixture, z); err == nil {
			t.Errorf("zone %q accepted", z)
		}
	}
}
