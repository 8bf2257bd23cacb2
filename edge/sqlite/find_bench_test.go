package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// seedScale fills a store with nTasks tasks (a tenth named 京东签到-N, a
// tenth 每日任务-N, the rest task-N; every seventh labelled "daily"; each
// with one trigger) and nRuns runs spread over the tasks and over 30 days
// before t0 (one in fifty failed, the newest hundredth of a percent queued), with SQL in
// one transaction: the store's own write path would take an hour for a
// million runs. Ids are UUID-shaped so cursors take them.
func seedScale(tb testing.TB, s *Store, nTasks, nRuns int) {
	tb.Helper()
	ctx := context.Background()
	cs, err := edge.CompileSpec(shellSpec("node script.js"))
	if err != nil {
		tb.Fatal(err)
	}
	base := t0.UnixMilli() - 30*24*3600*1000
	queued := max(2, nRuns/10000) // the newest runs wait
	span := int64(30 * 24 * 3600 * 1000)
	stmts := []struct {
		q    string
		args []any
	}{
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
INSERT INTO tasks (id, project_id, name, enabled, current_revision, created_at_ms, updated_at_ms, labels)
SELECT printf('00000000-0000-7000-8000-%012x', i), 'default',
    CASE i % 10 WHEN 0 THEN printf('京东签到-%05d', i) WHEN 1 THEN printf('每日任务-%05d', i) ELSE printf('task-%05d', i) END,
    1, 1, ? + i, ? + i, CASE WHEN i % 7 = 0 THEN '["daily"]' ELSE '[]' END FROM n`, []any{nTasks, base, base}},
		{`UPDATE tasks SET search_text = lower(name || char(10) || 'node script.js' || CASE WHEN labels = '[]' THEN '' ELSE char(10) || 'daily' END)`, nil},
		{`INSERT INTO task_labels (task_id, label) SELECT id, 'daily' FROM tasks WHERE labels <> '[]'`, nil},
		{`INSERT INTO task_revisions (task_id, revision, spec_kind, spec_json, spec_digest, timeout_ms, max_attempts,
    backoff_base_ms, backoff_max_ms, retry_on_lost, concurrency, created_at_ms)
SELECT id, 1, ?, ?, ?, ?, 1, 0, 0, 0, 'allow', created_at_ms FROM tasks`, []any{cs.Spec.Kind, string(cs.Canonical), cs.Digest.String(), cs.Spec.TimeoutMs}},
		{`INSERT INTO triggers (id, task_id, current_revision, created_at_ms, updated_at_ms)
SELECT '10000000' || substr(id, 9), id, 1, created_at_ms, created_at_ms FROM tasks`, nil},
		{`INSERT INTO trigger_revisions (trigger_id, revision, expression, time_zone, misfire_policy, grace_ms, enabled, created_at_ms)
SELECT id, 1, '0 3 * * *', 'Asia/Shanghai', 'skip', 30000, 1, created_at_ms FROM triggers`, nil},
		{`INSERT INTO trigger_schedules (trigger_id, trigger_revision, active, initialized, next_fire_at_ms, state_version, updated_at_ms)
SELECT id, 1, 1, 1, ? + (rowid * 7919) % 86400000, 1, created_at_ms FROM triggers`, []any{t0.UnixMilli()}},
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
INSERT INTO runs (id, project_id, task_id, task_revision, origin, idempotency_key, scheduled_for_ms, status, version,
    event_seq, attempt_count, max_attempts, backoff_base_ms, backoff_max_ms, retry_on_lost, concurrency, not_before_ms,
    error_class, created_at_ms, updated_at_ms, finished_at_ms)
SELECT printf('00000001-0000-7000-8000-%012x', i), 'default', printf('00000000-0000-7000-8000-%012x', (i * 7919) % ?), 1, 'manual',
    'bench:' || i, ? + i * ? / ?, CASE WHEN i >= ? - ? THEN 'queued' WHEN i % 50 = 0 THEN 'failed' ELSE 'succeeded' END, 1,
    0, 1, 1, 0, 0, 0, 'allow', ? + i * ? / ?, CASE WHEN i % 50 = 0 AND i < ? - ? THEN 'process_exit' ELSE '' END,
    ? + i * ? / ?, ? + i * ? / ?, CASE WHEN i >= ? - ? THEN 0 ELSE ? + i * ? / ? + 1000 END FROM n`,
			[]any{nRuns, nTasks, base, span, nRuns, nRuns, queued, base, span, nRuns, nRuns, queued, base, span, nRuns, base, span, nRuns, nRuns, queued, base, span, nRuns}},
	}
	err = s.write(ctx, func(tx *wtx, _ *signals) error {
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
				return fmt.Errorf("%.60s: %w", st.q, err)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// findCase is one list read of the benchmark and the plan test.
type findCase struct {
	name string
	read func(ctx context.Context, s *Store) error
}

func findCases(tb testing.TB, s *Store, nTasks int) []findCase {
	ctx := context.Background()
	// Cursors deep in both lists: the page after the last-but-one of tasks,
	// and the runs page 90% down.
	lastTasks, err := s.ListTasks(ctx, edge.TaskFilter{Limit: 1, Cursor: encodeCursor(cursor{AtMs: t0.UnixMilli() - 30*24*3600*1000 + int64(nTasks) - 52, ID: fmt.Sprintf("00000000-0000-7000-8000-%012x", nTasks-52)})})
	if err != nil || len(lastTasks.Tasks) != 1 {
		tb.Fatalf("deep task cursor: %v", err)
	}
	var deepRun string
	if err := s.reader.QueryRow(`SELECT id FROM runs ORDER BY created_at_ms, id LIMIT 1 OFFSET (SELECT COUNT(*) / 10 FROM runs)`).Scan(&deepRun); err != nil {
		tb.Fatal(err)
	}
	dr, err := s.GetRun(ctx, deepRun)
	if err != nil {
		tb.Fatal(err)
	}
	deepCursor := encodeCursor(cursor{AtMs: dr.CreatedAtMs, ID: dr.ID})
	lastTask := fmt.Sprintf("00000000-0000-7000-8000-%012x", nTasks-1)
	page, err := s.ListTasks(ctx, edge.TaskFilter{Limit: 50})
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, len(page.Tasks))
	for i, t := range page.Tasks {
		ids[i] = t.ID
	}
	tasks := func(f edge.TaskFilter, min int) func(context.Context, *Store) error {
		return func(ctx context.Context, s *Store) error {
			f.Limit = 50
			p, err := s.ListTasks(ctx, f)
			if err == nil && len(p.Tasks) < min {
				err = fmt.Errorf("%d tasks, want at least %d", len(p.Tasks), min)
			}
			return err
		}
	}
	runs := func(f edge.RunFilter, min int) func(context.Context, *Store) error {
		return func(ctx context.Context, s *Store) error {
			f.Limit = 50
			p, err := s.ListRuns(ctx, f)
			if err == nil && (len(p.Runs) < min || (len(p.Runs) > 0 && p.Runs[0].TaskName == "")) {
				err = fmt.Errorf("%d runs (want %d), first named %q", len(p.Runs), min, p.Runs[0].TaskName)
			}
			return err
		}
	}
	// The small seed of the plan test has fewer rows than a page.
	atLeast := func(n int) int {
		if nTasks < 10_000 {
			return 1
		}
		return n
	}
	enabled := true
	return []findCase{
		{"tasks/first-page", tasks(edge.TaskFilter{}, atLeast(50))},
		{"tasks/last-page", tasks(edge.TaskFilter{Cursor: lastTasks.NextCursor}, atLeast(50))},
		{"tasks/search-chinese", tasks(edge.TaskFilter{Search: "签到"}, atLeast(50))},
		{"tasks/search-one-of-all", tasks(edge.TaskFilter{Search: fmt.Sprintf("task-%05d", nTasks-2)}, atLeast(1))},
		{"tasks/label-enabled", tasks(edge.TaskFilter{Label: "daily", Enabled: &enabled}, atLeast(50))},
		{"tasks/page-triggers-and-last-runs", func(ctx context.Context, s *Store) error {
			if _, err := s.TriggersOf(ctx, ids); err != nil {
				return err
			}
			_, err := s.LastRuns(ctx, ids)
			return err
		}},
		{"runs/first-page", runs(edge.RunFilter{}, atLeast(50))},
		{"runs/deep-page", runs(edge.RunFilter{Cursor: deepCursor}, atLeast(50))},
		{"runs/of-last-task", runs(edge.RunFilter{TaskID: lastTask}, atLeast(50))},
		{"runs/failed", runs(edge.RunFilter{Statuses: []run.RunStatus{run.RunFailed}}, atLeast(50))},
		{"runs/queued-manual", runs(edge.RunFilter{Statuses: []run.RunStatus{run.RunQueued}, Origin: edge.OriginManual}, atLeast(50))},
		{"overview", func(ctx context.Context, s *Store) error {
			o, err := s.Overview(ctx, t0.UnixMilli())
			if err == nil && (o.FailureCount == 0 || len(o.NextFires) == 0) {
				err = fmt.Errorf("overview without failures or fires: %+v", o)
			}
			return err
		}},
	}
}

// BenchmarkFindAtScale: every list page of the edge with 10,000 tasks and
// 1,000,000 runs (ADR 0050's goal: ≤ 50 ms p99 per page). Reports p50 and
// p99 per case. The seed takes a while; run it alone:
//
//	go test ./sqlite -run '^$' -bench FindAtScale -benchtime 200x
func BenchmarkFindAtScale(b *testing.B) {
	const nTasks, nRuns = 10_000, 1_000_000
	s := openTest(b, clock.NewFake(t0))
	start := time.Now()
	seedScale(b, s, nTasks, nRuns)
	b.Logf("seeded %d tasks and %d runs in %v", nTasks, nRuns, time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	for _, c := range findCases(b, s, nTasks) {
		b.Run(c.name, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t := time.Now()
				if err := c.read(ctx, s); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[(len(ds)*99)/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// TestFindQueryPlans holds the list statements to the plans ADR 0050
// relies on: every page walks an index in its order and stops after a
// page (no sort of the whole table, no scan of runs), the task name is a
// primary-key lookup per row, the overview counts from indexes alone.
func TestFindQueryPlans(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	seedScale(t, s, 200, 2000)
	cur := encodeCursor(cursor{AtMs: 1, ID: "00000000-0000-7000-8000-000000000001"})
	enabled := true
	plan := func(q string, args []any) string {
		rows, err := s.reader.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("explain %.80s: %v", q, err)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		return strings.Join(lines, "\n")
	}
	tq := func(f edge.TaskFilter) listQuery {
		q, err := tasksQuery(f, 50)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	rq := func(f edge.RunFilter) (string, []any) {
		q, args, err := runsQuery(f, 50)
		if err != nil {
			t.Fatal(err)
		}
		return q, args
	}
	type want struct {
		name      string
		q         string
		args      []any
		has, nots []string
	}
	var cases []want
	for name, f := range map[string]edge.TaskFilter{
		"tasks":        {},
		"tasks-cursor": {Cursor: cur},
		"tasks-search": {Search: "签到", Cursor: cur},
		"tasks-label":  {Label: "daily", Enabled: &enabled},
	} {
		q := tq(f)
		cases = append(cases, want{name: name + "-count", q: q.count, args: q.countArgs, has: []string{"USING COVERING INDEX tasks_find (project_id=?)"}})
		cases = append(cases, want{name: name, q: q.list, args: q.listArgs, has: []string{"USING INDEX tasks_find (project_id=?"}, nots: []string{"TEMP B-TREE"}})
	}
	for name, f := range map[string]edge.RunFilter{
		"runs":        {},
		"runs-cursor": {Cursor: cur},
	} {
		q, args := rq(f)
		cases = append(cases, want{name: name, q: q, args: args, has: []string{" r USING INDEX runs_keyset", "USING INDEX sqlite_autoindex_tasks_1 (id=?)"}, nots: []string{"TEMP B-TREE"}})
	}
	q, args := rq(edge.RunFilter{TaskID: "x", Cursor: cur})
	cases = append(cases, want{name: "runs-task", q: q, args: args, has: []string{"USING INDEX runs_task_keyset (task_id=?"}, nots: []string{"TEMP B-TREE"}})
	q, args = rq(edge.RunFilter{Statuses: []run.RunStatus{run.RunFailed}})
	cases = append(cases, want{name: "runs-status", q: q, args: args, has: []string{"USING INDEX runs_status_keyset (status=?)"}, nots: []string{"TEMP B-TREE"}})
	cases = append(cases,
		want{name: "last-runs", q: qLastRuns, args: []any{`["a"]`}, has: []string{"USING INDEX sqlite_autoindex_runs_1 (id=?)", "INDEX runs_task_keyset (task_id=?)"}},
		want{name: "overview-active", q: qOverviewActive, has: []string{"USING COVERING INDEX runs_status_", "(status=?)"}},
		want{name: "overview-recent", q: qOverviewRecent, args: []any{1}, has: []string{"USING COVERING INDEX runs_status_finished (status=? AND finished_at_ms>?)"}, nots: []string{"TEMP B-TREE"}},
		want{name: "overview-failures", q: qOverviewFailures, args: []any{1, 10}, has: []string{"USING INDEX runs_status_finished (status=? AND finished_at_ms>?)"}},
		want{name: "overview-fires", q: qOverviewFires, args: []any{10}, has: []string{"USING INDEX trigger_schedules_due (active=?"}, nots: []string{"TEMP B-TREE"}},
	)
	for _, c := range cases {
		p := plan(c.q, c.args)
		t.Logf("%s:\n%s", c.name, p)
		for _, h := range c.has {
			if !strings.Contains(p, h) {
				t.Errorf("%s: plan lacks %q:\n%s", c.name, h, p)
			}
		}
		for _, n := range c.nots {
			if strings.Contains(p, n) {
				t.Errorf("%s: plan has %q:\n%s", c.name, n, p)
			}
		}
	}
	// The cases of the benchmark answer on the small seed too.
	for _, c := range findCases(t, s, 200) {
		if err := c.read(context.Background(), s); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
