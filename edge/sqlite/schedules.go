package sqlite

import (
	"context"
	"database/sql"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/edge"
)

// DueSchedules implements edge.ScheduleStore. Uninitialised rows have
// next_fire_at_ms = 0, so one index range on (active, next_fire_at_ms)
// returns them first, then the most overdue.
func (s *Store) DueSchedules(ctx context.Context, nowMs int64, limit int) ([]edge.ScheduleItem, error) {
	if limit <= 0 || limit > maxScheduleBatch {
		return nil, errs.Invalidf("limit", "must be 1..%d, got %d", maxScheduleBatch, limit)
	}
	rows, err := s.reader.QueryContext(ctx, selectTrigger+` WHERE s.active = 1 AND s.next_fire_at_ms <= ?
        ORDER BY s.next_fire_at_ms, s.trigger_id LIMIT ?`, nowMs, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []edge.ScheduleItem
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, edge.ScheduleItem{Trigger: t, Schedule: t.Schedule})
	}
	return out, translate(rows.Err())
}

// maxScheduleBatch bounds one DueSchedules read (DESIGN.md §8: 256).
const maxScheduleBatch = 256

// NextFireAtMs implements edge.ScheduleStore.
func (s *Store) NextFireAtMs(ctx context.Context, nowMs int64) (int64, bool, error) {
	var at sql.NullInt64
	if err := s.reader.QueryRowContext(ctx, `SELECT MIN(next_fire_at_ms) FROM trigger_schedules WHERE active = 1`).Scan(&at); err != nil {
		return 0, false, translate(err)
	}
	if !at.Valid {
		return 0, false, nil
	}
	if at.Int64 == 0 { // an uninitialised schedule is due now
		return nowMs, true, nil
	}
	return at.Int64, true, nil
}

// ApplyDecision implements edge.ScheduleStore.
func (s *Store) ApplyDecision(ctx context.Context, item edge.ScheduleItem, d schedule.Decision, nowMs int64) (edge.Admission, error) {
	res := s.ApplyDecisions(ctx, []edge.Decided{{Item: item, Decision: d}}, nowMs)
	return res[0].Admission, res[0].Err
}

// ApplyDecisions implements edge.ScheduleStore: the decisions are members
// of one group commit (group.go), each in its own savepoint with its own
// compare-and-set and idempotency key, so a member that fails (a lost
// compare-and-set, a task deleted meanwhile) is rolled back alone.
func (s *Store) ApplyDecisions(ctx context.Context, batch []edge.Decided, nowMs int64) []edge.DecisionResult {
	out := make([]edge.DecisionResult, len(batch))
	fns := make([]writeFn, 0, len(batch))
	idx := make([]int, 0, len(batch))
	for i, b := range batch {
		if b.Decision.Kind == schedule.Wait {
			out[i].Admission.Schedule = b.Item.Schedule
			continue
		}
		if err := checkDecision(b.Decision); err != nil {
			out[i].Err = err
			continue
		}
		fns = append(fns, s.decisionFn(ctx, b.Item, b.Decision, nowMs, &out[i].Admission))
		idx = append(idx, i)
	}
	for j, err := range s.writeBatch(ctx, false, fns) {
		if err != nil {
			out[idx[j]] = edge.DecisionResult{Err: err}
		}
	}
	return out
}

// checkDecision validates a decision before it is written.
func checkDecision(d schedule.Decision) error {
	switch d.Kind {
	case schedule.Init, schedule.Fire, schedule.Skip:
	default:
		return errs.Invalidf("kind", "unknown decision kind %d", int(d.Kind))
	}
	if d.NextFireAtMs <= 0 {
		return errs.Invalidf("nextFireAtMs", "must be positive, got %d", d.NextFireAtMs)
	}
	if d.Kind == schedule.Fire && d.ScheduledForMs <= 0 {
		return errs.Invalidf("scheduledForMs", "must be positive, got %d", d.ScheduledForMs)
	}
	return nil
}

// decisionFn is the write of one decision: the cursor's compare-and-set
// and, for Fire, the admission; out is the row after the write.
func (s *Store) decisionFn(ctx context.Context, item edge.ScheduleItem, d schedule.Decision, nowMs int64, out *edge.Admission) writeFn {
	tr := item.Trigger
	return func(tx *wtx, sg *signals) error {
		last := item.Schedule.LastScheduledAtMs
		if d.Kind == schedule.Fire {
			last = d.ScheduledForMs
		}
		res, err := tx.ExecContext(ctx, qAdvanceSchedule, d.NextFireAtMs, last, d.Missed, d.Missed, nowMs, nowMs,
			tr.ID, item.Schedule.StateVersion, tr.Revision)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return errs.E(errs.Conflict, "stateVersion", "schedule of trigger %s moved on from version %d", tr.ID, item.Schedule.StateVersion)
		}
		if d.Kind == schedule.Fire {
			out.RunID, out.Created, err = admit(ctx, tx, sg, admission{
				runID:           newID(),
				taskID:          tr.TaskID,
				origin:          edge.OriginSchedule,
				triggerID:       tr.ID,
				triggerRevision: tr.Revision,
				key:             schedule.IdempotencyKey(tr.ID, tr.Revision, d.ScheduledForMs),
				scheduledForMs:  d.ScheduledForMs,
				missed:          d.Missed,
				nowMs:           nowMs,
			})
			if err != nil {
				return err
			}
		}
		// The row after the update, without reading it back.
		out.Schedule = item.Schedule
		out.Schedule.Initialized = true
		out.Schedule.NextFireAtMs = d.NextFireAtMs
		out.Schedule.LastScheduledAtMs = last
		out.Schedule.MissedTotal += d.Missed
		if d.Missed > 0 {
			out.Schedule.LastMissedAtMs = nowMs
		}
		out.Schedule.StateVersion++
		out.Schedule.UpdatedAtMs = nowMs
		return nil
	}
}

const qAdvanceSchedule = `UPDATE trigger_schedules SET initialized = 1, next_fire_at_ms = ?,
    last_scheduled_at_ms = ?, missed_total = missed_total + ?,
    last_missed_at_ms = CASE WHEN ? > 0 THEN ? ELSE last_missed_at_ms END,
    state_version = state_version + 1, updated_at_ms = ?
WHERE trigger_id = ? AND state_version = ? AND trigger_revision = ? AND active = 1`

// ParkSchedule implements edge.ScheduleStore.
func (s *Store) ParkSchedule(ctx context.Context, item edge.ScheduleItem, reason string, nowMs int64) error {
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `UPDATE trigger_schedules SET active = 0, last_error = ?,
            state_version = state_version + 1, updated_at_ms = ?
            WHERE trigger_id = ? AND state_version = ? AND trigger_revision = ?`,
			truncateUTF8(reason, maxMessage), nowMs, item.Trigger.ID, item.Schedule.StateVersion, item.Trigger.Revision)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return errs.E(errs.Conflict, "stateVersion", "schedule of trigger %s moved on from version %d", item.Trigger.ID, item.Schedule.StateVersion)
		}
		return nil
	})
}
