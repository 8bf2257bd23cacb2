package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
)

// runRow is a run as stored, with the columns edge.Run does not expose.
type runRow struct {
	edge.Run
	eventSeq      int64
	backoffBaseMs int64
	backoffMaxMs  int64
	retryOnLost   bool
}

func (r runRow) retryPolicy() spec.RetryPolicy {
	return spec.RetryPolicy{MaxAttempts: r.MaxAttempts, BackoffBaseMs: r.backoffBaseMs,
		BackoffMaxMs: r.backoffMaxMs, RetryOnLost: r.retryOnLost}
}

const runColumns = `r.id, r.project_id, r.task_id, r.task_revision, r.origin, IFNULL(r.trigger_id, ''),
    IFNULL(r.trigger_revision, 0), IFNULL(r.rerun_of, ''), r.idempotency_key, r.scheduled_for_ms, r.status,
    r.version, r.attempt_count, r.max_attempts, r.not_before_ms, r.concurrency, r.cancel_requested_at_ms,
    r.reason, r.error_class, r.exit_code, r.created_at_ms, r.updated_at_ms, r.finished_at_ms,
    r.event_seq, r.backoff_base_ms, r.backoff_max_ms, r.retry_on_lost, r.random_delay_ms`

const (
	selectRun = `SELECT ` + runColumns + ` FROM runs r`
	qLoadRun  = selectRun + ` WHERE r.id = ?`
	qSaveRun  = `UPDATE runs SET status = ?, version = version + 1, event_seq = ?,
    attempt_count = ?, not_before_ms = ?, cancel_requested_at_ms = ?, reason = ?, error_class = ?,
    exit_code = ?, updated_at_ms = ?, finished_at_ms = ?
WHERE id = ? AND version = ?`
	qInsertEvent   = `INSERT INTO run_events (run_id, seq, type, at_ms, payload) VALUES (?, ?, ?, ?, ?)`
	qInsertAttempt = `INSERT INTO attempts (run_id, attempt, status, created_at_ms) VALUES (?, ?, 'claimed', ?)`
	qLoadAttempt   = `SELECT ` + attemptColumns + ` FROM attempts a WHERE a.run_id = ? AND a.attempt = ?`
)

// scanRun reads a row of runColumns, then into extra (columns selected
// after them).
func scanRun(sc scanner, extra ...any) (runRow, error) {
	var (
		r                         runRow
		origin, status, conc, cls string
		exit                      sql.NullInt64
	)
	dest := []any{&r.ID, &r.ProjectID, &r.TaskID, &r.TaskRevision, &origin, &r.TriggerID,
		&r.TriggerRevision, &r.RerunOf, &r.IdempotencyKey, &r.ScheduledForMs, &status,
		&r.Version, &r.AttemptCount, &r.MaxAttempts, &r.NotBeforeMs, &conc, &r.CancelRequestedAtMs,
		&r.Reason, &cls, &exit, &r.CreatedAtMs, &r.UpdatedAtMs, &r.FinishedAtMs,
		&r.eventSeq, &r.backoffBaseMs, &r.backoffMaxMs, &r.retryOnLost, &r.RandomDelayMs}
	err := sc.Scan(append(dest, extra...)...)
	if err != nil {
		return runRow{}, err
	}
	r.Origin = edge.RunOrigin(origin)
	r.Status = run.RunStatus(status)
	r.Concurrency = spec.ConcurrencyPolicy(conc)
	r.ErrorClass = run.ErrorClass(cls)
	if exit.Valid {
		v := int(exit.Int64)
		r.ExitCode = &v
	}
	return r, nil
}

func loadRun(ctx context.Context, q queryer, runID string) (runRow, error) {
	r, err := scanRun(q.QueryRowContext(ctx, qLoadRun, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return runRow{}, errs.NotFoundf("run %s not found", runID)
	}
	return r, translate(err)
}

// pendingEvent is an event to append when the run row is saved.
type pendingEvent struct {
	typ     run.EventType
	payload run.Payload
}

// runChange accumulates the moves of one run inside one transaction and
// saves them with a compare-and-set on the version it was loaded at.
type runChange struct {
	r       runRow
	loaded  int64 // version the row had when loaded
	nowMs   int64
	events  []pendingEvent
	changed bool
}

func newRunChange(r runRow, nowMs int64) *runChange {
	return &runChange{r: r, loaded: r.Version, nowMs: nowMs}
}

// move changes the status, checked against the core state machine, and
// records the status event for it.
func (c *runChange) move(to run.RunStatus, ev run.EventType, p run.Payload) error {
	if err := run.CheckEvent(c.r.Status, to, ev); err != nil {
		return err
	}
	p.From, p.To = string(c.r.Status), string(to)
	c.r.Status = to
	if to.Terminal() {
		c.r.FinishedAtMs = c.nowMs
	}
	c.events = append(c.events, pendingEvent{ev, p})
	c.changed = true
	return nil
}

// note records an annotation event (no status change).
func (c *runChange) note(ev run.EventType, p run.Payload) {
	c.events = append(c.events, pendingEvent{ev, p})
	c.changed = true
}

// save writes the row (CAS on the loaded version) and appends the events.
func (c *runChange) save(ctx context.Context, tx *wtx) error {
	if !c.changed {
		return nil
	}
	var exit any
	if c.r.ExitCode != nil {
		exit = *c.r.ExitCode
	}
	seq := c.r.eventSeq
	res, err := tx.ExecContext(ctx, qSaveRun,
		string(c.r.Status), seq+int64(len(c.events)), c.r.AttemptCount, c.r.NotBeforeMs,
		c.r.CancelRequestedAtMs, c.r.Reason, string(c.r.ErrorClass), exit, c.nowMs, c.r.FinishedAtMs,
		c.r.ID, c.loaded)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return errs.E(errs.Conflict, "version", "run %s changed concurrently", c.r.ID)
	}
	if err := insertEvents(ctx, tx, c.r.ID, seq, c.nowMs, c.events); err != nil {
		return err
	}
	c.r.Version = c.loaded + 1
	c.r.eventSeq = seq + int64(len(c.events))
	c.r.UpdatedAtMs = c.nowMs
	c.loaded = c.r.Version
	c.events = nil
	c.changed = false
	return nil
}

func insertEvents(ctx context.Context, tx *wtx, runID string, afterSeq, nowMs int64, evs []pendingEvent) error {
	for i, e := range evs {
		body, err := e.payload.Encode()
		if err != nil {
			return errs.E(errs.Internal, "", "event %s payload: %v", e.typ, err)
		}
		if _, err := tx.ExecContext(ctx, qInsertEvent,
			runID, afterSeq+int64(i)+1, string(e.typ), nowMs, string(body)); err != nil {
			return err
		}
		tx.appended = true
	}
	return nil
}

const attemptColumns = `a.run_id, a.attempt, a.status, a.pid, a.pgid, a.created_at_ms, a.started_at_ms,
    a.finished_at_ms, a.exit_code, a.error_class, a.message, a.log_path, a.log_size, a.log_truncated,
    a.masked_count, a.script_tree`

func scanAttempt(sc scanner) (edge.Attempt, error) {
	var (
		a           edge.Attempt
		status, cls string
		exit        sql.NullInt64
	)
	if err := sc.Scan(&a.RunID, &a.Number, &status, &a.PID, &a.PGID, &a.CreatedAtMs, &a.StartedAtMs,
		&a.FinishedAtMs, &exit, &cls, &a.Message, &a.LogPath, &a.LogSize, &a.LogTruncated,
		&a.MaskedCount, &a.ScriptTree); err != nil {
		return edge.Attempt{}, err
	}
	a.Status = run.AttemptStatus(status)
	a.ErrorClass = run.ErrorClass(cls)
	if exit.Valid {
		v := int(exit.Int64)
		a.ExitCode = &v
	}
	return a, nil
}

func loadAttempt(ctx context.Context, q queryer, ref edge.AttemptRef) (edge.Attempt, error) {
	a, err := scanAttempt(q.QueryRowContext(ctx, qLoadAttempt, ref.RunID, ref.Number))
	if errors.Is(err, sql.ErrNoRows) {
		return edge.Attempt{}, errs.NotFoundf("run %s has no attempt %d", ref.RunID, ref.Number)
	}
	return a, translate(err)
}

func insertAttempt(ctx context.Context, tx *wtx, runID string, number int, nowMs int64) error {
	_, err := tx.ExecContext(ctx, qInsertAttempt,
		runID, number, nowMs)
	return err
}

// moveAttempt compare-and-sets an attempt from → to (checked against the
// core state machine); set adds column assignments ("col = ?") with args.
func moveAttempt(ctx context.Context, tx *wtx, ref edge.AttemptRef, from, to run.AttemptStatus, set string, args ...any) error {
	if err := run.TransitionAttempt(from, to); err != nil {
		return err
	}
	q := moveAttemptSQL(set)
	all := append([]any{string(to)}, args...)
	all = append(all, ref.RunID, ref.Number, string(from))
	res, err := tx.ExecContext(ctx, q, all...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return errs.E(errs.Conflict, "status", "attempt %d of run %s is no longer %s", ref.Number, ref.RunID, from)
	}
	return nil
}

// Column assignments of the attempt moves the runner makes.
const (
	setAttemptRunning   = "pid = ?, pgid = ?, log_path = ?, started_at_ms = ?, script_tree = ?"
	setAttemptFinished  = "finished_at_ms = ?, exit_code = ?, error_class = ?, message = ?, log_size = ?, log_truncated = ?, masked_count = ?"
	setAttemptCancelled = "finished_at_ms = ?, error_class = ?"
)

func moveAttemptSQL(set string) string {
	q := `UPDATE attempts SET status = ?`
	if set != "" {
		q += ", " + set
	}
	return q + ` WHERE run_id = ? AND attempt = ? AND status = ?`
}

// truncateUTF8 makes s valid UTF-8 and cuts it to at most n bytes on a
// rune boundary.
func truncateUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
