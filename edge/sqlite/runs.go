package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge"
)

// GetRun implements edge.RunStore.
func (s *Store) GetRun(ctx context.Context, runID string) (edge.Run, error) {
	r, err := scanNamedRun(s.reader.QueryRowContext(ctx, selectRunNamed+` WHERE r.id = ?`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return edge.Run{}, errs.NotFoundf("run %s not found", runID)
	}
	return r, translate(err)
}

// maxStatusFilters bounds RunFilter.Statuses.
const maxStatusFilters = 10

// ListRuns implements edge.RunStore: newest first, keyset on
// (created_at_ms, id).
func (s *Store) ListRuns(ctx context.Context, f edge.RunFilter) (edge.RunPage, error) {
	limit, err := pageLimit(f.Limit)
	if err != nil {
		return edge.RunPage{}, err
	}
	q, args, err := runsQuery(f, limit)
	if err != nil {
		return edge.RunPage{}, err
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return edge.RunPage{}, translate(err)
	}
	defer rows.Close()
	var page edge.RunPage
	for rows.Next() {
		r, err := scanNamedRun(rows)
		if err != nil {
			return edge.RunPage{}, translate(err)
		}
		page.Runs = append(page.Runs, r)
	}
	if err := rows.Err(); err != nil {
		return edge.RunPage{}, translate(err)
	}
	if len(page.Runs) > limit {
		page.Runs = page.Runs[:limit]
		last := page.Runs[limit-1]
		page.NextCursor = encodeCursor(cursor{AtMs: last.CreatedAtMs, ID: last.ID})
	}
	return page, nil
}

// runsQuery builds ListRuns' statement (TestFindQueryPlans reads its
// plan): the runs of a page with their tasks' names.
func runsQuery(f edge.RunFilter, limit int) (string, []any, error) {
	var (
		where []string
		args  []any
	)
	if f.TaskID != "" {
		where = append(where, "r.task_id = ?")
		args = append(args, f.TaskID)
	}
	if f.TriggerID != "" {
		where = append(where, "r.trigger_id = ?")
		args = append(args, f.TriggerID)
	}
	if f.Origin != "" {
		where = append(where, "r.origin = ?")
		args = append(args, string(f.Origin))
	}
	if len(f.Statuses) > maxStatusFilters {
		return "", nil, errs.Invalidf("status", "at most %d statuses, got %d", maxStatusFilters, len(f.Statuses))
	}
	if len(f.Statuses) > 0 {
		marks := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			if !st.Valid() {
				return "", nil, errs.Invalidf("status", "unknown run status %q", string(st))
			}
			marks[i] = "?"
			args = append(args, string(st))
		}
		where = append(where, "r.status IN ("+strings.Join(marks, ", ")+")")
	}
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return "", nil, err
		}
		where = append(where, "(r.created_at_ms, r.id) < (?, ?)")
		args = append(args, c.AtMs, c.ID)
	}
	q := selectRunNamed
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY r.created_at_ms DESC, r.id DESC LIMIT ?"
	args = append(args, limit+1)
	return q, args, nil
}

// ListAttempts implements edge.RunStore.
func (s *Store) ListAttempts(ctx context.Context, runID string) ([]edge.Attempt, error) {
	if _, err := loadRun(ctx, s.reader, runID); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+attemptColumns+` FROM attempts a WHERE a.run_id = ? ORDER BY a.attempt`, runID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []edge.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// GetAttempt implements edge.RunStore.
func (s *Store) GetAttempt(ctx context.Context, ref edge.AttemptRef) (edge.Attempt, error) {
	return loadAttempt(ctx, s.reader, ref)
}

// ListRunEvents implements edge.RunStore.
func (s *Store) ListRunEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]edge.RunEvent, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	if afterSeq < 0 {
		return nil, errs.Invalidf("after", "must not be negative, got %d", afterSeq)
	}
	if _, err := loadRun(ctx, s.reader, runID); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT seq, type, at_ms, payload FROM run_events
        WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, afterSeq, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []edge.RunEvent
	for rows.Next() {
		var (
			e       = edge.RunEvent{RunID: runID}
			typ, pl string
		)
		if err := rows.Scan(&e.Seq, &typ, &e.AtMs, &pl); err != nil {
			return nil, translate(err)
		}
		e.Type = run.EventType(typ)
		if e.Payload, err = run.DecodePayload([]byte(pl)); err != nil {
			return nil, errs.E(errs.Internal, "", "stored payload of event %d of run %s: %v", e.Seq, runID, err)
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

const (
	manualKeyPrefix    = "ql3:manual:v1:"
	generatedKeyPrefix = "ql3:run:v1:"
	maxClientKey       = 128
)

func validateClientKey(k string) error {
	if len(k) > maxClientKey {
		return errs.TooLargef("idempotencyKey", "is %d bytes, limit is %d", len(k), maxClientKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return errs.Invalidf("idempotencyKey", "byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// CreateManualRun implements edge.RunStore.
func (s *Store) CreateManualRun(ctx context.Context, in edge.ManualRun) (edge.Run, bool, error) {
	if err := validateClientKey(in.IdempotencyKey); err != nil {
		return edge.Run{}, false, err
	}
	now := s.clock.Now().UnixMilli()
	id := newID()
	key := generatedKeyPrefix + id
	if in.IdempotencyKey != "" {
		key = manualKeyPrefix + in.IdempotencyKey
	}
	var (
		runID   string
		created bool
	)
	err := s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		if in.RerunOf != "" {
			prev, err := loadRun(ctx, tx, in.RerunOf)
			if errs.Code(err) == errs.NotFound {
				return errs.Invalidf("rerunOf", "run %s not found", in.RerunOf)
			}
			if err != nil {
				return err
			}
			if prev.TaskID != in.TaskID {
				return errs.Invalidf("rerunOf", "run %s belongs to another task", in.RerunOf)
			}
		}
		var err error
		runID, created, err = admit(ctx, tx, sg, admission{
			runID:          id,
			taskID:         in.TaskID,
			origin:         edge.OriginManual,
			rerunOf:        in.RerunOf,
			key:            key,
			scheduledForMs: now,
			nowMs:          now,
		})
		return err
	})
	if err != nil {
		return edge.Run{}, false, err
	}
	r, err := s.GetRun(ctx, runID)
	if err == nil && !created && r.TaskID != in.TaskID {
		return edge.Run{}, false, errs.E(errs.Conflict, "idempotencyKey", "key already used for a run of task %s", r.TaskID)
	}
	return r, created, err
}

const (
	qRunByKey   = `SELECT id FROM runs WHERE idempotency_key = ?`
	qTaskPolicy = `SELECT t.current_revision, IFNULL(t.deleted_at_ms, 0), r.max_attempts,
    r.backoff_base_ms, r.backoff_max_ms, r.retry_on_lost, r.concurrency,
    IFNULL(json_extract(r.spec_json, '$.randomDelayMs'), 0)
FROM tasks t JOIN task_revisions r ON r.task_id = t.id AND r.revision = t.current_revision
WHERE t.id = ?`
	qUnfinishedRun = `SELECT id FROM runs WHERE task_id = ?
    AND status IN ('queued', 'dispatching', 'running', 'retry_wait') LIMIT 1`
	qInsertRun = `INSERT INTO runs (id, project_id, task_id, task_revision, origin, trigger_id,
    trigger_revision, rerun_of, idempotency_key, scheduled_for_ms, status, version, event_seq, attempt_count,
    max_attempts, backoff_base_ms, backoff_max_ms, retry_on_lost, concurrency, not_before_ms, reason,
    created_at_ms, updated_at_ms, finished_at_ms, random_delay_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 2, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// admission is the input of admit.
type admission struct {
	runID           string
	taskID          string
	origin          edge.RunOrigin
	triggerID       string
	triggerRevision int64
	rerunOf         string
	key             string
	scheduledForMs  int64
	missed          int64
	nowMs           int64
}

// admit inserts a queued run with its claimed first attempt and the
// run.created/run.queued events, applying the concurrency policy of the
// task's current revision — or finds the run that already holds the key.
func admit(ctx context.Context, tx *wtx, sg *signals, a admission) (runID string, created bool, err error) {
	err = tx.QueryRowContext(ctx, qRunByKey, a.key).Scan(&runID)
	switch {
	case err == nil:
		return runID, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", false, err
	}
	var (
		revision, deletedAt     int64
		maxAttempts             int
		backoffBase, backoffMax int64
		retryOnLost             bool
		concurrency             string
		maxDelay                int64
	)
	err = tx.QueryRowContext(ctx, qTaskPolicy, a.taskID).Scan(&revision, &deletedAt, &maxAttempts, &backoffBase, &backoffMax,
		&retryOnLost, &concurrency, &maxDelay)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && deletedAt != 0) {
		return "", false, errs.NotFoundf("task %s not found", a.taskID)
	}
	if err != nil {
		return "", false, err
	}

	status, reason, finished := run.RunQueued, "", int64(0)
	attempts := 1
	switch concurrency {
	case "forbid":
		var other string
		err := tx.QueryRowContext(ctx, qUnfinishedRun, a.taskID).Scan(&other)
		switch {
		case err == nil:
			status, reason, finished, attempts = run.RunCancelled, edge.SkipConcurrencyForbid, a.nowMs, 0
		case !errors.Is(err, sql.ErrNoRows):
			return "", false, err
		}
	case "replace":
		if err := replaceActive(ctx, tx, sg, a.taskID, a.nowMs); err != nil {
			return "", false, err
		}
	}

	var trigger, rerun any
	if a.triggerID != "" {
		trigger = a.triggerID
	}
	if a.rerunOf != "" {
		rerun = a.rerunOf
	}
	var triggerRev any
	if a.triggerRevision != 0 {
		triggerRev = a.triggerRevision
	}
	// randomDelayMs (QingLong's RandomDelay) delays scheduled occurrences
	// only, by a delay drawn from the occurrence's key: a replay, a restart
	// and the Run's page all see the same one. Run-now starts at once.
	var delay int64
	if a.origin == edge.OriginSchedule {
		delay = scriptpath.RandomDelayMs(a.key, maxDelay)
	}
	if _, err := tx.ExecContext(ctx, qInsertRun, a.runID, edge.DefaultProjectID, a.taskID, revision, string(a.origin), trigger, triggerRev, rerun,
		a.key, a.scheduledForMs, string(status), attempts, maxAttempts, backoffBase, backoffMax,
		boolInt(retryOnLost), concurrency, a.scheduledForMs+delay, reason, a.nowMs, a.nowMs, finished, delay); err != nil {
		return "", false, err
	}
	createdPayload := run.Payload{
		To:              string(run.RunCreated),
		TriggerID:       a.triggerID,
		TriggerRevision: a.triggerRevision,
		ScheduledForMs:  a.scheduledForMs,
		Missed:          a.missed,
		RerunOfRunID:    a.rerunOf,
	}
	second := pendingEvent{run.EventQueued, run.Payload{From: string(run.RunCreated), To: string(run.RunQueued), AttemptNumber: 1}}
	if status == run.RunCancelled {
		second = pendingEvent{run.EventSkipped, run.Payload{From: string(run.RunCreated), To: string(run.RunCancelled), Reason: reason}}
	} else {
		if err := insertAttempt(ctx, tx, a.runID, 1, a.nowMs); err != nil {
			return "", false, err
		}
		sg.runsReady = true
	}
	if err := insertEvents(ctx, tx, a.runID, 0, a.nowMs, []pendingEvent{{run.EventCreated, createdPayload}, second}); err != nil {
		return "", false, err
	}
	return a.runID, true, nil
}

// replaceActive applies the replace policy for a new run of taskID:
// waiting runs are cancelled, active ones are asked to cancel.
func replaceActive(ctx context.Context, tx *wtx, sg *signals, taskID string, nowMs int64) error {
	if err := cancelWaitingRuns(ctx, tx, taskID, edge.ReasonReplaced, nowMs); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, selectRun+` WHERE r.task_id = ? AND r.status IN ('dispatching', 'running')
        AND r.cancel_requested_at_ms = 0`, taskID)
	if err != nil {
		return err
	}
	active, err := collectRuns(rows)
	if err != nil {
		return err
	}
	for _, r := range active {
		c := newRunChange(r, nowMs)
		c.r.CancelRequestedAtMs = nowMs
		c.r.Reason = edge.ReasonReplaced
		c.note(run.EventCancelRequested, run.Payload{Reason: edge.ReasonReplaced})
		if err := c.save(ctx, tx); err != nil {
			return err
		}
		sg.cancelRequested = true
	}
	return nil
}

func collectRuns(rows *sql.Rows) ([]runRow, error) {
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// cancelWaitingRuns cancels the queued and retry_wait runs of a task.
func cancelWaitingRuns(ctx context.Context, tx *wtx, taskID, reason string, nowMs int64) error {
	rows, err := tx.QueryContext(ctx, selectRun+` WHERE r.task_id = ? AND r.status IN ('queued', 'retry_wait')`, taskID)
	if err != nil {
		return err
	}
	waiting, err := collectRuns(rows)
	if err != nil {
		return err
	}
	for _, r := range waiting {
		if err := cancelWaiting(ctx, tx, r, reason, "", nowMs); err != nil {
			return err
		}
	}
	return nil
}

// cancelWaiting moves a queued/retry_wait/lost run to cancelled; its
// claimed attempt (if any) is cancelled too.
func cancelWaiting(ctx context.Context, tx *wtx, r runRow, reason string, class string, nowMs int64) error {
	c := newRunChange(r, nowMs)
	c.r.Reason = reason
	c.r.ErrorClass = run.ErrorClass(class)
	if err := c.move(run.RunCancelled, run.EventCancelled, run.Payload{Reason: reason, ErrorClass: c.r.ErrorClass}); err != nil {
		return err
	}
	if r.Status != run.RunLost && r.AttemptCount > 0 {
		ref := edge.AttemptRef{RunID: r.ID, Number: r.AttemptCount}
		if err := moveAttempt(ctx, tx, ref, run.AttemptClaimed, run.AttemptCancelled,
			setAttemptCancelled, nowMs, class); err != nil {
			return err
		}
	}
	return c.save(ctx, tx)
}

// RequestCancel implements edge.RunStore.
func (s *Store) RequestCancel(ctx context.Context, runID string) (edge.Run, error) {
	now := s.clock.Now().UnixMilli()
	err := s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		r, err := loadRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		switch r.Status {
		case run.RunQueued, run.RunRetryWait, run.RunLost:
			return cancelWaiting(ctx, tx, r, edge.ReasonUserCancel, string(run.ErrorCancelledByUser), now)
		case run.RunDispatching, run.RunRunning:
			if r.CancelRequestedAtMs != 0 {
				sg.cancelRequested = true // idempotent; wake the runner again
				return nil
			}
			c := newRunChange(r, now)
			c.r.CancelRequestedAtMs = now
			c.r.Reason = edge.ReasonUserCancel
			c.note(run.EventCancelRequested, run.Payload{Reason: edge.ReasonUserCancel})
			sg.cancelRequested = true
			return c.save(ctx, tx)
		}
		return errs.E(errs.Conflict, "status", "run %s already ended (%s)", runID, r.Status)
	})
	if err != nil {
		return edge.Run{}, err
	}
	return s.GetRun(ctx, runID)
}
