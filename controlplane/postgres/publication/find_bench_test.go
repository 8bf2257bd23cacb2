package publication_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
)

// BenchmarkFindAtScale: the control plane's list pages with 10,000 tasks
// (a tenth labelled, migration 0018) and 1,000,000 runs in one project (ADR 0057; the edge's goal is ≤ 50 ms
// p99 per page). Reports p50 and p99 per case; figures are reported,
// never asserted. The seed takes a while; run it alone:
//
//	go test ./postgres/publication -run '^$' -bench FindAtScale -benchtime 200x
func BenchmarkFindAtScale(b *testing.B) {
	const nTasks, nRuns = 10_000, 1_000_000
	ctx := context.Background()
	db := pgtest.NewDB(b)
	pub := publication.NewPublisher(db.Pool(b, postgres.RoleAdmin), publication.PublisherOptions{})
	proj, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	// One publisher at a time: publications of one project serialise.
	for i := range nTasks {
		name := fmt.Sprintf("task %05d", i)
		if i%1000 == 7 {
			name = fmt.Sprintf("京东签到 %05d", i) // ten tasks a Chinese search finds
		}
		tk, err := pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: proj.ID, Name: name, Spec: shellSpec(fmt.Sprintf("echo %d", i))})
		if err != nil {
			b.Fatal(err)
		}
		// Labels: 每日 on a tenth of the tasks, 京东 as well on ten of them.
		if i%10 == 7 {
			ls := []string{"每日"}
			if i%1000 == 7 {
				ls = append(ls, "京东")
			}
			if _, err := pub.SetTaskLabels(ctx, tk.ID, ls); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Runs are written directly (as the owner): one a minute per task over
	// the last 70 days, one in twenty failed.
	conn := db.Conn(b)
	if _, err := conn.Exec(ctx, `
		INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin,
			idempotency_key, scheduled_for_ms, status, retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms,
			retry_on_lost, timeout_ms, not_before_ms, error_class, created_at_ms, finished_at_ms, updated_at_ms)
		SELECT gen_random_uuid(), t.project_id, t.task_id, t.head_revision, e.execution_revision_id, e.digest, 'manual',
			'bench-' || g, ms, CASE WHEN g % 20 = 0 THEN 'failed' ELSE 'succeeded' END, 1, 0, 0, false, 60000, ms,
			CASE WHEN g % 20 = 0 THEN 'process_exit' END, ms, ms + 1000, ms + 1000
		FROM generate_series(1, $1::int) g
		CROSS JOIN LATERAL (SELECT (extract(epoch FROM now()) * 1000)::bigint - g::bigint * 6048 AS ms) m
		JOIN (SELECT row_number() OVER (ORDER BY task_id) - 1 AS rn, * FROM ql3.tasks) t ON t.rn = g % $2::int
		JOIN ql3.execution_revisions e ON e.task_id = t.task_id AND e.task_revision = t.head_revision`, nRuns, nTasks); err != nil {
		b.Fatal(err)
	}
	// What autovacuum does after a bulk load: statistics and the visibility map.
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE ql3.runs`); err != nil {
		b.Fatal(err)
	}
	for _, table := range []string{"tasks", "task_labels"} {
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE ql3.`+table); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d tasks and %d runs in %v", nTasks, nRuns, time.Since(start).Round(time.Millisecond))

	var lastTask string
	page, err := pub.FindTasks(ctx, proj.ID, "task 09999", controlplane.ListRequest{})
	if err != nil || len(page.Items) != 1 {
		b.Fatalf("last task: %v %v", page.Items, err)
	}
	lastTask = page.Items[0].ID
	deep, err := pub.ListRuns(ctx, controlplane.RunListFilter{ProjectID: proj.ID, Page: controlplane.ListRequest{Limit: 200}})
	if err != nil {
		b.Fatal(err)
	}
	for range 49 { // the cursor 10,000 runs deep
		if deep, err = pub.ListRuns(ctx, controlplane.RunListFilter{ProjectID: proj.ID, Page: controlplane.ListRequest{Limit: 200, Cursor: deep.NextCursor}}); err != nil {
			b.Fatal(err)
		}
	}
	fifty := controlplane.ListRequest{Limit: 50}
	cases := []struct {
		name string
		read func() error
	}{
		{"tasks/first-page", func() error { _, err := pub.FindTasks(ctx, proj.ID, "", fifty); return err }},
		{"tasks/search-chinese", func() error { _, err := pub.FindTasks(ctx, proj.ID, "签到", fifty); return err }},
		{"tasks/search-one-of-all", func() error { _, err := pub.FindTasks(ctx, proj.ID, "echo 4242", fifty); return err }},
		// The task list as the panel reads it (migration 0018): a page and
		// the filter's total.
		{"tasks/page-and-total", func() error {
			_, err := pub.FindTaskPage(ctx, controlplane.TaskFilter{ProjectID: proj.ID, Page: fifty})
			return err
		}},
		{"tasks/label-common-and-total", func() error { // 1,000 of 10,000
			_, err := pub.FindTaskPage(ctx, controlplane.TaskFilter{ProjectID: proj.ID, Label: "每日", Page: fifty})
			return err
		}},
		{"tasks/label-rare", func() error { // 10 of 10,000
			_, err := pub.FindTaskPage(ctx, controlplane.TaskFilter{ProjectID: proj.ID, Label: "京东", Page: fifty})
			return err
		}},
		{"tasks/label-enabled-search", func() error {
			on := true
			_, err := pub.FindTaskPage(ctx, controlplane.TaskFilter{ProjectID: proj.ID, Label: "每日", Enabled: &on, Q: "echo 9", Page: fifty})
			return err
		}},
		{"tasks/search-label-text", func() error { // labels are in the search text
			_, err := pub.FindTaskPage(ctx, controlplane.TaskFilter{ProjectID: proj.ID, Q: "京东", Page: fifty})
			return err
		}},
		{"runs/first-page", func() error {
			_, err := pub.ListRuns(ctx, controlplane.RunListFilter{Page: fifty})
			return err
		}},
		{"runs/project-first-page", func() error {
			_, err := pub.ListRuns(ctx, controlplane.RunListFilter{ProjectID: proj.ID, Page: fifty})
			return err
		}},
		{"runs/deep-page", func() error {
			_, err := pub.ListRuns(ctx, controlplane.RunListFilter{ProjectID: proj.ID, Page: controlplane.ListRequest{Limit: 50, Cursor: deep.NextCursor}})
			return err
		}},
		{"runs/of-last-task", func() error {
			_, err := pub.ListRuns(ctx, controlplane.RunListFilter{TaskID: lastTask, Page: fifty})
			return err
		}},
		{"runs/failed", func() error {
			_, err := pub.ListRuns(ctx, controlplane.RunListFilter{Statuses: []string{"failed"}, Page: fifty})
			return err
		}},
		{"overview", func() error { _, err := pub.Overview(ctx, proj.ID); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t := time.Now()
				if err := c.read(); err != nil {
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
