package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/migrations"
	"github.com/ql3/ql3/worker/clock"
)

func taskNamesOf(p edge.TaskPage) []string {
	out := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		out[i] = t.Name
	}
	return out
}

// TestTaskSearchAndFilters: a search finds a substring of the name (a
// Chinese one too), of the command and of a label, ASCII letters in either
// case; label and enabled filters; Total counts over all pages.
func TestTaskSearchAndFilters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	create := func(name, cmd string, labels ...string) edge.Task {
		task, err := s.CreateTask(ctx, edge.NewTask{Name: name, Spec: shellSpec(cmd), Enabled: true, Labels: labels})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return task
	}
	create("京东签到", "node jd_sign.js", "京东", "daily")
	create("Bilibili 每日任务", "python3 bili.py", "video")
	off := create("Backup", "tar czf /tmp/b.tgz /etc")
	argv := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/usr/bin/rsync", Args: []string{"-a", "/srv/"}}}.WithDefaults()
	if _, err := s.CreateTask(ctx, edge.NewTask{Name: "sync", Spec: argv, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetTaskEnabled(ctx, off.ID, false); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	for _, c := range []struct {
		f    edge.TaskFilter
		want []string
	}{
		{edge.TaskFilter{Search: "签到"}, []string{"京东签到"}},
		{edge.TaskFilter{Search: "每日"}, []string{"Bilibili 每日任务"}},
		{edge.TaskFilter{Search: "BILI"}, []string{"Bilibili 每日任务"}},
		{edge.TaskFilter{Search: "jd_sign"}, []string{"京东签到"}},
		{edge.TaskFilter{Search: "rsync -a"}, []string{"sync"}},
		{edge.TaskFilter{Search: "video"}, []string{"Bilibili 每日任务"}},
		{edge.TaskFilter{Search: "京东"}, []string{"京东签到"}},
		{edge.TaskFilter{Label: "daily"}, []string{"京东签到"}},
		{edge.TaskFilter{Label: "dai"}, nil},
		{edge.TaskFilter{Enabled: &no}, []string{"Backup"}},
		{edge.TaskFilter{Enabled: &yes, Search: "bili"}, []string{"Bilibili 每日任务"}},
		{edge.TaskFilter{Enabled: &no, Search: "bili"}, nil},
		{edge.TaskFilter{Search: "nothing like it"}, nil},
	} {
		p, err := s.ListTasks(ctx, c.f)
		if err != nil {
			t.Fatalf("%+v: %v", c.f, err)
		}
		if got := taskNamesOf(p); !slices.Equal(got, c.want) || p.Total != int64(len(c.want)) {
			t.Errorf("%+v: %v (total %d), want %v", c.f, got, p.Total, c.want)
		}
	}
	// Paging under a search: Total counts all, the cursor goes on.
	for i := range 5 {
		create(fmt.Sprintf("京东任务%d", i), "true")
	}
	p, err := s.ListTasks(ctx, edge.TaskFilter{Search: "京东", Limit: 4})
	if err != nil || len(p.Tasks) != 4 || p.Total != 6 || p.NextCursor == "" {
		t.Fatalf("first page: %v total %d next %q err %v", taskNamesOf(p), p.Total, p.NextCursor, err)
	}
	p, err = s.ListTasks(ctx, edge.TaskFilter{Search: "京东", Limit: 4, Cursor: p.NextCursor})
	if err != nil || !slices.Equal(taskNamesOf(p), []string{"京东任务3", "京东任务4"}) || p.NextCursor != "" {
		t.Fatalf("second page: %v next %q err %v", taskNamesOf(p), p.NextCursor, err)
	}
	for _, bad := range []string{strings.Repeat("长", edge.MaxSearchChars+1), "a\x01b", "\xff"} {
		if _, err := s.ListTasks(ctx, edge.TaskFilter{Search: bad}); errs.Code(err) != errs.Invalid || errs.Field(err) != "q" {
			t.Errorf("search %q: %v, want invalid q", bad, err)
		}
	}
}

// TestTaskLabels: labels are checked, kept in order, replaced without a
// revision, updated with the task and searchable after a rename.
func TestTaskLabels(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task, err := s.CreateTask(ctx, edge.NewTask{Name: "a", Spec: shellSpec("true"), Enabled: true, Labels: []string{"京东", "daily"}})
	if err != nil || !slices.Equal(task.Labels, []string{"京东", "daily"}) {
		t.Fatalf("create: %v %v", task.Labels, err)
	}
	for _, bad := range [][]string{{"a,b"}, {"x", "x"}, {strings.Repeat("x", edge.MaxLabelChars+1)}, {""}, make([]string, edge.MaxTaskLabels+1)} {
		if _, err := s.SetTaskLabels(ctx, task.ID, bad); errs.Code(err) != errs.Invalid || !strings.HasPrefix(errs.Field(err), "labels") {
			t.Errorf("labels %q: %v, want invalid labels…", bad, err)
		}
	}
	task, err = s.SetTaskLabels(ctx, task.ID, []string{"weekly"})
	if err != nil || !slices.Equal(task.Labels, []string{"weekly"}) || task.Revision != 1 {
		t.Fatalf("set: %v rev %d %v", task.Labels, task.Revision, err)
	}
	if p, _ := s.ListTasks(ctx, edge.TaskFilter{Label: "daily"}); len(p.Tasks) != 0 {
		t.Fatalf("the old label still selects: %v", taskNamesOf(p))
	}
	keep := []string{"weekly", "备份"}
	task, err = s.UpdateTask(ctx, task.ID, 1, edge.TaskUpdate{Name: "renamed", Spec: shellSpec("echo moved"), Labels: &keep})
	if err != nil || task.Revision != 2 || !slices.Equal(task.Labels, keep) {
		t.Fatalf("update: rev %d labels %v %v", task.Revision, task.Labels, err)
	}
	task, err = s.UpdateTask(ctx, task.ID, 2, edge.TaskUpdate{Name: "renamed", Spec: shellSpec("echo moved")})
	if err != nil || task.Revision != 2 || !slices.Equal(task.Labels, keep) {
		t.Fatalf("update without labels keeps them: rev %d labels %v %v", task.Revision, task.Labels, err)
	}
	for _, q := range []string{"renamed", "moved", "备份"} {
		if p, _ := s.ListTasks(ctx, edge.TaskFilter{Search: q}); len(p.Tasks) != 1 {
			t.Errorf("search %q after the update: %v", q, taskNamesOf(p))
		}
	}
	if p, _ := s.ListTasks(ctx, edge.TaskFilter{Label: "备份"}); len(p.Tasks) != 1 {
		t.Errorf("label filter after the update: %v", taskNamesOf(p))
	}
}

// TestRunsCarryTaskNames: list, get, the last runs of a page and the
// overview's failures name the task.
func TestRunsCarryTaskNamesAndOverview(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)
	sp := shellSpec("true")
	sp.Concurrency = spec.ConcurrencyAllow
	a := mustTask(t, s, "甲任务", sp)
	b := mustTask(t, s, "b-task", sp)
	ra := mustRun(t, s, a.ID, "ka")
	rb := mustRun(t, s, b.ID, "kb")
	page, err := s.ListRuns(ctx, edge.RunFilter{})
	if err != nil || len(page.Runs) != 2 || page.Runs[0].TaskName != "b-task" || page.Runs[1].TaskName != "甲任务" {
		t.Fatalf("list: %+v %v", page.Runs, err)
	}
	if r, err := s.GetRun(ctx, ra.ID); err != nil || r.TaskName != "甲任务" {
		t.Fatalf("get: %q %v", r.TaskName, err)
	}
	last, err := s.LastRuns(ctx, []string{a.ID, b.ID, "no-such-task"})
	if err != nil || len(last) != 2 || last[a.ID].ID != ra.ID || last[b.ID].ID != rb.ID {
		t.Fatalf("last runs: %v %v", last, err)
	}
	if _, err := s.CreateTrigger(ctx, a.ID, edge.TriggerInput{Expression: "0 3 * * *", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	trs, err := s.TriggersOf(ctx, []string{a.ID, b.ID})
	if err != nil || len(trs[a.ID]) != 1 || len(trs[b.ID]) != 0 {
		t.Fatalf("triggers of: %v %v", trs, err)
	}
	// A failure: claim the run and let its attempt fail.
	cl, err := s.ClaimRun(ctx, ra.ID, ra.Version, t0.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	ref := edge.AttemptRef{RunID: ra.ID, Number: cl.Attempt.Number}
	if _, err := s.MarkAttemptRunning(ctx, ref, edge.AttemptStart{PID: 1, PGID: 1, StartedAtMs: t0.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	one := 1
	if _, err := s.FinishAttempt(ctx, ref, edge.AttemptResult{Status: run.AttemptFailed, ExitCode: &one, ErrorClass: run.ErrorProcessExit, FinishedAtMs: t0.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DueSchedules(ctx, t0.UnixMilli(), 10); err != nil {
		t.Fatal(err)
	}
	o, err := s.Overview(ctx, t0.UnixMilli()+1000)
	if err != nil {
		t.Fatal(err)
	}
	if o.Tasks.Total != 2 || o.Tasks.Enabled != 2 || o.Active["queued"] != 1 || o.Recent["failed"] != 1 || o.FailureCount != 1 {
		t.Fatalf("overview counts: %+v", o)
	}
	if len(o.Failures) != 1 || o.Failures[0].ID != ra.ID || o.Failures[0].TaskName != "甲任务" {
		t.Fatalf("overview failures: %+v", o.Failures)
	}
	// A day later the failure is no longer recent.
	if o, err = s.Overview(ctx, t0.UnixMilli()+edge.OverviewWindowMs+1000); err != nil || o.FailureCount != 0 || len(o.Failures) != 0 {
		t.Fatalf("a day later: %+v %v", o, err)
	}
}

// TestViews: saved filters are checked, unique by name, bounded, deleted.
func TestViews(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	v, err := s.CreateView(ctx, "京东的", edge.ViewFilter{Search: " 京东 ", Label: "daily", Enabled: "true"})
	if err != nil || v.Filter.Search != "京东" {
		t.Fatalf("create: %+v %v", v, err)
	}
	if _, err := s.CreateView(ctx, "京东的", edge.ViewFilter{}); errs.Code(err) != errs.Conflict {
		t.Fatalf("same name: %v", err)
	}
	for _, c := range []struct {
		f     edge.ViewFilter
		field string
	}{{edge.ViewFilter{Enabled: "yes"}, "filter.enabled"}, {edge.ViewFilter{Label: "a,b"}, "filter.label"}, {edge.ViewFilter{Search: "\x01"}, "filter.search"}} {
		if _, err := s.CreateView(ctx, "bad", c.f); errs.Field(err) != c.field {
			t.Errorf("%+v: %v, want field %s", c.f, err, c.field)
		}
	}
	vs, err := s.ListViews(ctx)
	if err != nil || len(vs) != 1 || vs[0] != v {
		t.Fatalf("list: %+v %v", vs, err)
	}
	if err := s.DeleteView(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteView(ctx, v.ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("second delete: %v", err)
	}
}

// TestMigration7BackfillsSearchText: tasks stored before version 7 are
// found by name, shell command and argv as new ones are.
func TestMigration7BackfillsSearchText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	old, err := openWith(t, path, migrations.SQLite()[:6])
	if err != nil {
		t.Fatal(err)
	}
	argv := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/usr/bin/Rsync", Args: []string{"-a", "/srv/"}}}.WithDefaults()
	for i, c := range []spec.Command{shellSpec("node JD_sign.js"), argv} {
		cs, err := edge.CompileSpec(c)
		if err != nil {
			t.Fatal(err)
		}
		id := newID()
		if _, err := old.writer.Exec(`INSERT INTO tasks (id, project_id, name, enabled, current_revision, created_at_ms, updated_at_ms)
            VALUES (?, 'default', ?, 1, 1, ?, ?)`, id, []string{"旧的京东", "Old Sync"}[i], i, i); err != nil {
			t.Fatal(err)
		}
		if _, err := old.writer.Exec(insertTaskRevision, id, 1, cs.Spec.Kind, string(cs.Canonical), cs.Digest.String(),
			cs.Spec.TimeoutMs, 1, 0, 0, 0, "forbid", i); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s, err := openWith(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"京东": "旧的京东", "jd_sign": "旧的京东", "old sync": "Old Sync", "rsync -a /srv/": "Old Sync"} {
		p, err := s.ListTasks(context.Background(), edge.TaskFilter{Search: q})
		if err != nil || len(p.Tasks) != 1 || p.Tasks[0].Name != want {
			t.Errorf("search %q: %v %v, want %s", q, taskNamesOf(p), err, want)
		}
	}
	var st string
	if err := s.reader.QueryRow(`SELECT search_text FROM tasks WHERE name = 'Old Sync'`).Scan(&st); err != nil || st != edge.SearchText("Old Sync", argv, nil) {
		t.Errorf("backfilled %q, Go writes %q (%v)", st, edge.SearchText("Old Sync", argv, nil), err)
	}
}
