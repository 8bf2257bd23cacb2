package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
)

// The findable side (ADR 0050): labels, views, the overview, and the
// per-page reads the task list rides on. Every read here is one statement
// for a whole page, never one per row; the plans they rely on are in the
// ADR and checked by TestFindQueryPlans.

var _ edge.FindStore = (*Store)(nil)

// writeLabels stores a task's labels (the JSON column read with the task,
// one task_labels row each for the label filter) and its search text.
func writeLabels(ctx context.Context, tx *wtx, taskID, name string, c spec.Command, labels []string) error {
	if labels == nil {
		labels = []string{}
	}
	js, err := json.Marshal(labels)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET labels = ?, search_text = ? WHERE id = ?`,
		string(js), edge.SearchText(name, c, labels), taskID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM task_labels WHERE task_id = ?`, taskID); err != nil {
		return err
	}
	for _, l := range labels {
		if _, err := tx.ExecContext(ctx, `INSERT INTO task_labels (task_id, label) VALUES (?, ?)`, taskID, l); err != nil {
			return err
		}
	}
	return nil
}

// SetTaskLabels implements edge.FindStore.
func (s *Store) SetTaskLabels(ctx context.Context, taskID string, labels []string) (edge.Task, error) {
	labels, err := edge.CheckLabels(labels)
	if err != nil {
		return edge.Task{}, err
	}
	now := s.clock.Now().UnixMilli()
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		cur, err := getTask(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if cur.Deleted() {
			return errs.NotFoundf("task %s was deleted", taskID)
		}
		if err := writeLabels(ctx, tx, taskID, cur.Name, cur.Spec, labels); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tasks SET updated_at_ms = ? WHERE id = ?`, now, taskID)
		return err
	})
	if err != nil {
		return edge.Task{}, err
	}
	return s.GetTask(ctx, taskID)
}

// idList is a bounded list of ids as the JSON array json_each reads.
func idList(ids []string) (string, error) {
	if len(ids) > edge.MaxPageSize {
		return "", errs.Invalidf("ids", "at most %d per call, got %d", edge.MaxPageSize, len(ids))
	}
	b, err := json.Marshal(ids)
	return string(b), err
}

// qLastRuns finds each task's newest run through runs_task_keyset: one
// index seek per task of the page.
const qLastRuns = selectRun + ` WHERE r.id IN (SELECT (SELECT r2.id FROM runs r2 WHERE r2.task_id = j.value
    ORDER BY r2.created_at_ms DESC, r2.id DESC LIMIT 1) FROM json_each(?) j)`

// LastRuns implements edge.FindStore.
func (s *Store) LastRuns(ctx context.Context, taskIDs []string) (map[string]edge.Run, error) {
	out := make(map[string]edge.Run, len(taskIDs))
	if len(taskIDs) == 0 {
		return out, nil
	}
	js, err := idList(taskIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, qLastRuns, js)
	if err != nil {
		return nil, translate(err)
	}
	rs, err := collectRuns(rows)
	if err != nil {
		return nil, translate(err)
	}
	for _, r := range rs {
		out[r.TaskID] = r.Run
	}
	return out, nil
}

// TriggersOf implements edge.FindStore.
func (s *Store) TriggersOf(ctx context.Context, taskIDs []string) (map[string][]edge.Trigger, error) {
	out := make(map[string][]edge.Trigger, len(taskIDs))
	if len(taskIDs) == 0 {
		return out, nil
	}
	js, err := idList(taskIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, selectTrigger+` WHERE tr.task_id IN (SELECT value FROM json_each(?))
        AND tr.deleted_at_ms IS NULL ORDER BY tr.task_id, tr.created_at_ms, tr.id`, js)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, translate(err)
		}
		out[t.TaskID] = append(out[t.TaskID], t)
	}
	return out, translate(rows.Err())
}

// ListViews implements edge.FindStore: by name.
func (s *Store) ListViews(ctx context.Context) ([]edge.View, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, name, search, label, enabled, created_at_ms FROM task_views
        ORDER BY name, id LIMIT ?`, edge.MaxViews)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []edge.View
	for rows.Next() {
		var v edge.View
		if err := rows.Scan(&v.ID, &v.Name, &v.Filter.Search, &v.Filter.Label, &v.Filter.Enabled, &v.CreatedAtMs); err != nil {
			return nil, translate(err)
		}
		out = append(out, v)
	}
	return out, translate(rows.Err())
}

// CreateView implements edge.FindStore.
func (s *Store) CreateView(ctx context.Context, name string, f edge.ViewFilter) (edge.View, error) {
	name, f, err := edge.CheckView(name, f)
	if err != nil {
		return edge.View{}, err
	}
	v := edge.View{ID: newID(), Name: name, Filter: f, CreatedAtMs: s.clock.Now().UnixMilli()}
	err = s.write(ctx, func(tx *wtx, _ *signals) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM task_views`).Scan(&n); err != nil {
			return err
		}
		if n >= edge.MaxViews {
			return errs.TooLargef("name", "at most %d views are kept", edge.MaxViews)
		}
		var other string
		err := tx.QueryRowContext(ctx, `SELECT id FROM task_views WHERE name = ?`, name).Scan(&other)
		switch {
		case err == nil:
			return errs.E(errs.Conflict, "name", "a view named %q already exists", name)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO task_views (id, name, search, label, enabled, created_at_ms)
            VALUES (?, ?, ?, ?, ?, ?)`, v.ID, v.Name, f.Search, f.Label, f.Enabled, v.CreatedAtMs)
		return err
	})
	if err != nil {
		return edge.View{}, err
	}
	return v, nil
}

// DeleteView implements edge.FindStore.
func (s *Store) DeleteView(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM task_views WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errs.NotFoundf("view %s not found", id)
		}
		return nil
	})
}

// The overview's statements. Active statuses come from runs_status_keyset
// (one range per status, index only), finished ones from
// runs_status_finished (the last 24 hours of each status, index only), the
// failures from the same index (the window of three statuses, sorted:
// a few hundred rows at most), the fires from trigger_schedules_due.
const (
	qOverviewTasks = `SELECT COUNT(*), IFNULL(SUM(enabled), 0) FROM tasks
    WHERE project_id = ? AND deleted_at_ms IS NULL`
	qOverviewActive = `SELECT status, COUNT(*) FROM runs
    WHERE status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait') GROUP BY status`
	qOverviewRecent = `SELECT status, COUNT(*) FROM runs
    WHERE status IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')
    AND finished_at_ms >= ? GROUP BY status`
	qOverviewFailures = selectRunNamed + ` WHERE r.status IN ('failed', 'timed_out', 'lost')
    AND r.finished_at_ms >= ? ORDER BY r.finished_at_ms DESC LIMIT ?`
	qOverviewFires = `SELECT tr.task_id, t.name, s.trigger_id, r.expression, r.time_zone, s.next_fire_at_ms
FROM trigger_schedules s
JOIN triggers tr ON tr.id = s.trigger_id
JOIN tasks t ON t.id = tr.task_id
JOIN trigger_revisions r ON r.trigger_id = tr.id AND r.revision = tr.current_revision
WHERE s.active = 1 AND s.initialized = 1 AND s.next_fire_at_ms > 0
ORDER BY s.next_fire_at_ms LIMIT ?`
)

// Overview implements edge.FindStore. Its reads run in one read
// transaction, so the counts agree with each other.
func (s *Store) Overview(ctx context.Context, nowMs int64) (edge.Overview, error) {
	// The window starts after 0: a run that has not finished has
	// finished_at_ms 0 and must not count.
	o := edge.Overview{NowMs: nowMs, SinceMs: max(1, nowMs-edge.OverviewWindowMs), Active: map[string]int64{}, Recent: map[string]int64{}}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return edge.Overview{}, translate(err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, qOverviewTasks, edge.DefaultProjectID).Scan(&o.Tasks.Total, &o.Tasks.Enabled); err != nil {
		return edge.Overview{}, translate(err)
	}
	if err := countByStatus(ctx, tx, o.Active, qOverviewActive); err != nil {
		return edge.Overview{}, err
	}
	if err := countByStatus(ctx, tx, o.Recent, qOverviewRecent, o.SinceMs); err != nil {
		return edge.Overview{}, err
	}
	for _, st := range []run.RunStatus{run.RunFailed, run.RunTimedOut, run.RunLost} {
		o.FailureCount += o.Recent[string(st)]
	}
	rows, err := tx.QueryContext(ctx, qOverviewFailures, o.SinceMs, edge.OverviewFailures)
	if err != nil {
		return edge.Overview{}, translate(err)
	}
	if o.Failures, err = collectNamedRuns(rows); err != nil {
		return edge.Overview{}, translate(err)
	}
	rows, err = tx.QueryContext(ctx, qOverviewFires, edge.OverviewFires)
	if err != nil {
		return edge.Overview{}, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var f edge.NextFire
		if err := rows.Scan(&f.TaskID, &f.TaskName, &f.TriggerID, &f.Expression, &f.TimeZone, &f.AtMs); err != nil {
			return edge.Overview{}, translate(err)
		}
		o.NextFires = append(o.NextFires, f)
	}
	return o, translate(rows.Err())
}

func countByStatus(ctx context.Context, tx *sql.Tx, into map[string]int64, q string, args ...any) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			st string
			n  int64
		)
		if err := rows.Scan(&st, &n); err != nil {
			return translate(err)
		}
		into[st] = n
	}
	return translate(rows.Err())
}

// selectRunNamed is selectRun with the task's name: one primary-key
// lookup per row of the page, in the same statement.
const selectRunNamed = `SELECT ` + runColumns + `, IFNULL((SELECT t.name FROM tasks t WHERE t.id = r.task_id), '') FROM runs r`

func scanNamedRun(sc scanner) (edge.Run, error) {
	var name string
	r, err := scanRun(sc, &name)
	r.TaskName = name
	return r.Run, err
}

func collectNamedRuns(rows *sql.Rows) ([]edge.Run, error) {
	defer rows.Close()
	var out []edge.Run
	for rows.Next() {
		r, err := scanNamedRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
