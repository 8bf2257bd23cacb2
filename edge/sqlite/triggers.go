package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/edge"
)

const selectTrigger = `SELECT tr.id, tr.task_id, tr.current_revision, r.expression, r.time_zone, r.misfire_policy,
    r.grace_ms, r.enabled, tr.created_at_ms, r.created_at_ms,
    s.trigger_revision, s.initialized, s.next_fire_at_ms, s.last_scheduled_at_ms, s.state_version,
    s.missed_total, s.last_missed_at_ms, s.last_error, s.updated_at_ms
FROM triggers tr
JOIN trigger_revisions r ON r.trigger_id = tr.id AND r.revision = tr.current_revision
JOIN trigger_schedules s ON s.trigger_id = tr.id`

func scanTrigger(sc scanner) (edge.Trigger, error) {
	var (
		t       edge.Trigger
		misfire string
	)
	err := sc.Scan(&t.ID, &t.TaskID, &t.Revision, &t.Expression, &t.TimeZone, &misfire,
		&t.GraceMs, &t.Enabled, &t.CreatedAtMs, &t.UpdatedAtMs,
		&t.Schedule.TriggerRevision, &t.Schedule.Initialized, &t.Schedule.NextFireAtMs,
		&t.Schedule.LastScheduledAtMs, &t.Schedule.StateVersion, &t.Schedule.MissedTotal,
		&t.Schedule.LastMissedAtMs, &t.Schedule.LastError, &t.Schedule.UpdatedAtMs)
	if err != nil {
		return edge.Trigger{}, err
	}
	t.Misfire = schedule.MisfirePolicy(misfire)
	t.Schedule.TriggerID = t.ID
	return t, nil
}

func getTrigger(ctx context.Context, q queryer, triggerID string) (edge.Trigger, error) {
	t, err := scanTrigger(q.QueryRowContext(ctx, selectTrigger+` WHERE tr.id = ? AND tr.deleted_at_ms IS NULL`, triggerID))
	if errors.Is(err, sql.ErrNoRows) {
		return edge.Trigger{}, errs.NotFoundf("trigger %s not found", triggerID)
	}
	return t, translate(err)
}

const insertTriggerRevision = `INSERT INTO trigger_revisions (trigger_id, revision, expression, time_zone,
    misfire_policy, grace_ms, enabled, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// CreateTrigger implements edge.TaskStore.
func (s *Store) CreateTrigger(ctx context.Context, taskID string, in edge.TriggerInput) (edge.Trigger, error) {
	in, err := edge.NormalizeTrigger(in)
	if err != nil {
		return edge.Trigger{}, err
	}
	now := s.clock.Now().UnixMilli()
	id := newID()
	err = s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		task, err := getTask(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if task.Deleted() {
			return errs.NotFoundf("task %s was deleted", taskID)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM triggers WHERE task_id = ? AND deleted_at_ms IS NULL`,
			taskID).Scan(&n); err != nil {
			return err
		}
		if n >= maxTriggersPerTask {
			return errs.TooLargef("triggers", "a task has at most %d triggers", maxTriggersPerTask)
		}
		if err := checkNotDuplicate(ctx, tx, taskID, in, ""); err != nil {
			return err
		}
		if err := insertTrigger(ctx, tx, id, taskID, in, task.Enabled, now); err != nil {
			return err
		}
		sg.schedulesChanged = true
		return nil
	})
	if err != nil {
		return edge.Trigger{}, err
	}
	return getTrigger(ctx, s.reader, id)
}

// checkNotDuplicate refuses a trigger whose schedule another live trigger
// of the task (other than exceptID) already has: two Runs per instant.
func checkNotDuplicate(ctx context.Context, tx *wtx, taskID string, in edge.TriggerInput, exceptID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT tr.id, r.expression, r.time_zone FROM triggers tr
        JOIN trigger_revisions r ON r.trigger_id = tr.id AND r.revision = tr.current_revision
        WHERE tr.task_id = ? AND tr.deleted_at_ms IS NULL AND tr.id <> ?`, taskID, exceptID)
	if err != nil {
		return err
	}
	defer rows.Close()
	want := edge.ScheduleKey(in)
	for rows.Next() {
		var id string
		var other edge.TriggerInput
		if err := rows.Scan(&id, &other.Expression, &other.TimeZone); err != nil {
			return err
		}
		if edge.ScheduleKey(other) == want {
			return errs.E(errs.Conflict, "expression", "the task already has trigger %s with this expression and time zone: it would run twice per instant", id)
		}
	}
	return rows.Err()
}

// insertTrigger writes a new trigger at revision 1 with its uninitialised
// schedule row (active only when both the task and the trigger are
// enabled). in must be normalised.
func insertTrigger(ctx context.Context, tx *wtx, id, taskID string, in edge.TriggerInput, taskEnabled bool, now int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO triggers (id, task_id, current_revision, created_at_ms, updated_at_ms)
            VALUES (?, ?, 1, ?, ?)`, id, taskID, now, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, insertTriggerRevision, id, 1, in.Expression, in.TimeZone,
		string(in.Misfire), in.GraceMs, boolInt(in.Enabled), now); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO trigger_schedules (trigger_id, trigger_revision, active,
            initialized, next_fire_at_ms, state_version, updated_at_ms) VALUES (?, 1, ?, 0, 0, 1, ?)`,
		id, boolInt(taskEnabled && in.Enabled), now)
	return err
}

// updateTriggerTx is UpdateTrigger inside tx (in already normalized).
func updateTriggerTx(ctx context.Context, tx *wtx, sg *signals, triggerID string, expectedRevision int64, in edge.TriggerInput, now int64) error {
	cur, err := getTrigger(ctx, tx, triggerID)
	if err != nil {
		return err
	}
	if cur.Revision != expectedRevision {
		return errs.E(errs.Conflict, "revision", "trigger %s is at revision %d, not %d", triggerID, cur.Revision, expectedRevision)
	}
	task, err := getTask(ctx, tx, cur.TaskID)
	if err != nil {
		return err
	}
	if err := checkNotDuplicate(ctx, tx, cur.TaskID, in, triggerID); err != nil {
		return err
	}
	next := cur.Revision + 1
	if _, err := tx.ExecContext(ctx, insertTriggerRevision, triggerID, next, in.Expression, in.TimeZone,
		string(in.Misfire), in.GraceMs, boolInt(in.Enabled), now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE triggers SET current_revision = ?, updated_at_ms = ? WHERE id = ?`,
		next, now, triggerID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE trigger_schedules SET trigger_revision = ?, active = ?,
            initialized = 0, next_fire_at_ms = 0, last_error = '', state_version = state_version + 1, updated_at_ms = ?
            WHERE trigger_id = ?`, next, boolInt(task.Enabled && !task.Deleted() && in.Enabled), now, triggerID); err != nil {
		return err
	}
	sg.schedulesChanged = true
	return nil
}

// UpdateTrigger implements edge.TaskStore. The new revision and the reset
// of the schedule row (cursor cleared, state_version bumped) commit
// together, so a scheduler holding the old row loses its compare-and-set.
func (s *Store) UpdateTrigger(ctx context.Context, triggerID string, expectedRevision int64, in edge.TriggerInput) (edge.Trigger, error) {
	in, err := edge.NormalizeTrigger(in)
	if err != nil {
		return edge.Trigger{}, err
	}
	now := s.clock.Now().UnixMilli()
	err = s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		return updateTriggerTx(ctx, tx, sg, triggerID, expectedRevision, in, now)
	})
	if err != nil {
		return edge.Trigger{}, err
	}
	return getTrigger(ctx, s.reader, triggerID)
}

// DeleteTrigger implements edge.TaskStore: the trigger and its revisions
// stay for the runs that reference them; the schedule goes inactive.
func (s *Store) DeleteTrigger(ctx context.Context, triggerID string) error {
	now := s.clock.Now().UnixMilli()
	return s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		if _, err := getTrigger(ctx, tx, triggerID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE triggers SET deleted_at_ms = ?, updated_at_ms = ? WHERE id = ?`,
			now, now, triggerID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE trigger_schedules SET active = 0, state_version = state_version + 1,
            updated_at_ms = ? WHERE trigger_id = ?`, now, triggerID); err != nil {
			return err
		}
		sg.schedulesChanged = true
		return nil
	})
}

// GetTrigger implements edge.TaskStore.
func (s *Store) GetTrigger(ctx context.Context, triggerID string) (edge.Trigger, error) {
	return getTrigger(ctx, s.reader, triggerID)
}

const maxTriggersPerTask = edge.MaxTriggersPerTask

// ListTriggers implements edge.TaskStore: the live triggers of a task,
// oldest first.
func (s *Store) ListTriggers(ctx context.Context, taskID string) ([]edge.Trigger, error) {
	if _, err := getTask(ctx, s.reader, taskID); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, selectTrigger+` WHERE tr.task_id = ? AND tr.deleted_at_ms IS NULL
        ORDER BY tr.created_at_ms, tr.id LIMIT ?`, taskID, maxTriggersPerTask)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []edge.Trigger
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, t)
	}
	return out, translate(rows.Err())
}
