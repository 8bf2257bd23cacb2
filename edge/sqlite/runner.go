package sqlite

import (
	"cmp"
	"context"
	"database/sql"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
)

// ListDueRuns implements edge.RunnerStore.
func (s *Store) ListDueRuns(ctx context.Context, nowMs int64, limit int) ([]edge.Run, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	return s.readRuns(ctx, selectRun+` WHERE r.status IN ('queued', 'retry_wait') AND r.not_before_ms <= ?
        AND (r.concurrency = 'allow' OR NOT EXISTS (SELECT 1 FROM runs o
             WHERE o.task_id = r.task_id AND o.status IN ('dispatching', 'running')))
        ORDER BY r.not_before_ms, r.created_at_ms, r.id LIMIT ?`, nowMs, limit)
}

// NextDueAtMs implements edge.RunnerStore.
func (s *Store) NextDueAtMs(ctx context.Context, nowMs int64) (int64, bool, error) {
	var at sql.NullInt64
	err := s.reader.QueryRowContext(ctx, `SELECT MIN(not_before_ms) FROM runs
        WHERE status IN ('queued', 'retry_wait') AND not_before_ms > ?`, nowMs).Scan(&at)
	if err != nil {
		return 0, false, translate(err)
	}
	return at.Int64, at.Valid, nil
}

// ClaimRun implements edge.RunnerStore. It commits with synchronous=FULL:
// once it returns, a crash can no longer forget that the attempt may have
// started.
func (s *Store) ClaimRun(ctx context.Context, runID string, expectedVersion int64, nowMs int64) (edge.Claim, error) {
	var claim edge.Claim
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		r, err := loadRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if r.Version != expectedVersion {
			return errs.E(errs.Conflict, "version", "run %s is at version %d, not %d", runID, r.Version, expectedVersion)
		}
		if r.NotBeforeMs > nowMs {
			return errs.E(errs.Conflict, "notBeforeMs", "run %s is not due before %d", runID, r.NotBeforeMs)
		}
		c := newRunChange(r, nowMs)
		if r.Status == run.RunRetryWait {
			if err := c.move(run.RunQueued, run.EventQueued, run.Payload{AttemptNumber: r.AttemptCount}); err != nil {
				return err
			}
		}
		if err := c.move(run.RunDispatching, run.EventDispatched, run.Payload{AttemptNumber: r.AttemptCount}); err != nil {
			return err
		}
		ref := edge.AttemptRef{RunID: runID, Number: r.AttemptCount}
		if err := moveAttempt(ctx, tx, ref, run.AttemptClaimed, run.AttemptStarting, ""); err != nil {
			return err
		}
		c.note(run.EventStarting, run.Payload{AttemptNumber: ref.Number})
		if err := c.save(ctx, tx); err != nil {
			return err
		}
		if claim.Attempt, err = loadAttempt(ctx, tx, ref); err != nil {
			return err
		}
		if claim.Revision, err = getTaskRevision(ctx, tx, r.TaskID, r.TaskRevision); err != nil {
			return err
		}
		claim.Run = c.r.Run
		return nil
	})
	if err != nil {
		return edge.Claim{}, err
	}
	return claim, nil
}

// SkipRun implements edge.RunnerStore.
func (s *Store) SkipRun(ctx context.Context, runID string, expectedVersion int64, reason string, nowMs int64) (edge.Run, error) {
	if err := checkReason(reason); err != nil {
		return edge.Run{}, err
	}
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		r, err := loadRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if r.Version != expectedVersion {
			return errs.E(errs.Conflict, "version", "run %s is at version %d, not %d", runID, r.Version, expectedVersion)
		}
		if r.Status != run.RunQueued && r.Status != run.RunRetryWait {
			return errs.E(errs.Conflict, "status", "run %s is %s, not waiting", runID, r.Status)
		}
		return cancelWaiting(ctx, tx, r, reason, "", nowMs)
	})
	if err != nil {
		return edge.Run{}, err
	}
	return s.GetRun(ctx, runID)
}

// checkReason accepts a low-cardinality reason code (it goes into event
// payloads, which take tokens only).
func checkReason(reason string) error {
	if reason == "" || len(reason) > 64 {
		return errs.Invalidf("reason", "must be 1..64 bytes")
	}
	for i := 0; i < len(reason); i++ {
		c := reason[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return errs.Invalidf("reason", "must be a code of a-z, 0-9, '_' and '.'")
		}
	}
	return nil
}

// MarkAttemptRunning implements edge.RunnerStore.
func (s *Store) MarkAttemptRunning(ctx context.Context, ref edge.AttemptRef, in edge.AttemptStart) (edge.Run, error) {
	if in.PID <= 0 || in.PGID <= 0 {
		return edge.Run{}, errs.Invalidf("pid", "pid and pgid must be positive, got %d and %d", in.PID, in.PGID)
	}
	if in.StartedAtMs <= 0 {
		return edge.Run{}, errs.Invalidf("startedAtMs", "must be set")
	}
	var out edge.Run
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		r, err := loadRun(ctx, tx, ref.RunID)
		if err != nil {
			return err
		}
		if r.AttemptCount != ref.Number {
			return errs.E(errs.Conflict, "attempt", "attempt %d of run %s is not the current one (%d)", ref.Number, ref.RunID, r.AttemptCount)
		}
		if err := moveAttempt(ctx, tx, ref, run.AttemptStarting, run.AttemptRunning,
			setAttemptRunning, in.PID, in.PGID, in.LogPath, in.StartedAtMs, in.ScriptTree); err != nil {
			return err
		}
		c := newRunChange(r, in.StartedAtMs)
		if err := c.move(run.RunRunning, run.EventRunning, run.Payload{AttemptNumber: ref.Number}); err != nil {
			return err
		}
		if err := c.save(ctx, tx); err != nil {
			return err
		}
		out = c.r.Run
		return nil
	})
	return out, err
}

// maxMessage bounds Attempt.Message (the column has the same CHECK).
const maxMessage = 512

// FinishAttempt implements edge.RunnerStore.
func (s *Store) FinishAttempt(ctx context.Context, ref edge.AttemptRef, res edge.AttemptResult) (edge.FinishResult, error) {
	class, err := finishClass(res)
	if err != nil {
		return edge.FinishResult{}, err
	}
	if res.Reason != "" {
		if err := checkReason(res.Reason); err != nil {
			return edge.FinishResult{}, err
		}
	}
	var out edge.FinishResult
	err = s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		r, err := loadRun(ctx, tx, ref.RunID)
		if err != nil {
			return err
		}
		if r.AttemptCount != ref.Number {
			return errs.E(errs.Conflict, "attempt", "attempt %d of run %s is not the current one (%d)", ref.Number, ref.RunID, r.AttemptCount)
		}
		a, err := loadAttempt(ctx, tx, ref)
		if err != nil {
			return err
		}
		var exit any
		if res.ExitCode != nil {
			exit = *res.ExitCode
		}
		if err := moveAttempt(ctx, tx, ref, a.Status, res.Status,
			setAttemptFinished,
			res.FinishedAtMs, exit, string(class), truncateUTF8(res.Message, maxMessage), res.LogSize,
			boolInt(res.LogTruncated), max(res.MaskedCount, 0)); err != nil {
			return err
		}

		c := newRunChange(r, res.FinishedAtMs)
		c.r.ExitCode = res.ExitCode
		c.r.ErrorClass = class
		p := run.Payload{AttemptNumber: ref.Number, ExitCode: res.ExitCode, ErrorClass: class,
			LogTruncated: res.LogTruncated, Reason: res.Reason}
		if a.StartedAtMs > 0 && res.FinishedAtMs > a.StartedAtMs {
			p.DurationMs = res.FinishedAtMs - a.StartedAtMs
		}
		retry := !res.NoRetry && r.CancelRequestedAtMs == 0 && r.AttemptCount < r.MaxAttempts &&
			class.Retryable(r.retryOnLost)
		notBefore := res.FinishedAtMs + r.retryPolicy().BackoffMs(ref.Number)

		switch {
		case res.Status == run.AttemptSucceeded:
			err = c.move(run.RunSucceeded, run.EventSucceeded, p)
		case res.Status == run.AttemptCancelled:
			if c.r.Reason == "" {
				c.r.Reason = cmp.Or(res.Reason, edge.ReasonUserCancel)
			}
			p.Reason = c.r.Reason
			err = c.move(run.RunCancelled, run.EventCancelled, p)
		case res.Status == run.AttemptLost:
			err = c.move(run.RunLost, run.EventLost, p)
			if err == nil && retry {
				// lost → retry_wait (DESIGN §2): the next attempt waits for
				// the backoff like any retry.
				c.r.FinishedAtMs = 0
				c.r.NotBeforeMs = notBefore
				err = c.move(run.RunRetryWait, run.EventRetryScheduled,
					run.Payload{AttemptNumber: ref.Number, ErrorClass: class, RetryAtMs: notBefore})
			} else if err == nil {
				c.r.FinishedAtMs = res.FinishedAtMs // lost without retry: nothing will act on it any more
			}
		case retry:
			c.r.NotBeforeMs = notBefore
			p.RetryAtMs = notBefore
			err = c.move(run.RunRetryWait, run.EventRetryScheduled, p)
		case res.Status == run.AttemptTimedOut:
			err = c.move(run.RunTimedOut, run.EventTimedOut, p)
		default:
			if res.Reason != "" {
				c.r.Reason = res.Reason
			}
			err = c.move(run.RunFailed, run.EventFailed, p)
		}
		if err != nil {
			return err
		}
		if c.r.Status == run.RunQueued || c.r.Status == run.RunRetryWait {
			c.r.AttemptCount = ref.Number + 1
			if err := insertAttempt(ctx, tx, r.ID, c.r.AttemptCount, res.FinishedAtMs); err != nil {
				return err
			}
			next, err := loadAttempt(ctx, tx, edge.AttemptRef{RunID: r.ID, Number: c.r.AttemptCount})
			if err != nil {
				return err
			}
			out.Retry = &next
		}
		if err := c.save(ctx, tx); err != nil {
			return err
		}
		// A finished attempt may unblock a run held back by forbid/replace,
		// and a retry is a run that will become due.
		sg.runsReady = true
		out.Run = c.r.Run
		out.Attempt, err = loadAttempt(ctx, tx, ref)
		return err
	})
	if err != nil {
		return edge.FinishResult{}, err
	}
	return out, nil
}

// finishClass validates an AttemptResult and returns its error class,
// defaulted from the status.
func finishClass(res edge.AttemptResult) (run.ErrorClass, error) {
	if res.ErrorClass != "" && !res.ErrorClass.Valid() {
		return "", errs.Invalidf("errorClass", "unknown error class %q", string(res.ErrorClass))
	}
	if res.ExitCode != nil && (*res.ExitCode < 0 || *res.ExitCode > 255) {
		return "", errs.Invalidf("exitCode", "must be 0..255, got %d", *res.ExitCode)
	}
	if res.LogSize < 0 {
		return "", errs.Invalidf("logSize", "must not be negative")
	}
	if res.FinishedAtMs <= 0 {
		return "", errs.Invalidf("finishedAtMs", "must be set")
	}
	defaults := map[run.AttemptStatus]run.ErrorClass{
		run.AttemptFailed:    run.ErrorProcessExit,
		run.AttemptTimedOut:  run.ErrorTimeout,
		run.AttemptCancelled: run.ErrorCancelledByUser,
		run.AttemptLost:      run.ErrorWorkerLost,
	}
	switch res.Status {
	case run.AttemptSucceeded:
		if res.ErrorClass != "" {
			return "", errs.Invalidf("errorClass", "a succeeded attempt has no error class")
		}
		return "", nil
	case run.AttemptFailed, run.AttemptTimedOut, run.AttemptCancelled, run.AttemptLost:
		if res.ErrorClass != "" {
			return res.ErrorClass, nil
		}
		return defaults[res.Status], nil
	}
	return "", errs.Invalidf("status", "an attempt finishes as succeeded, failed, timed_out, cancelled or lost, not %q", string(res.Status))
}

// ListInFlight implements edge.RunnerStore.
func (s *Store) ListInFlight(ctx context.Context) ([]edge.InFlight, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+attemptColumns+` FROM attempts a
        WHERE a.status IN ('starting', 'running') ORDER BY a.created_at_ms, a.run_id`)
	if err != nil {
		return nil, translate(err)
	}
	var attempts []edge.Attempt
	func() {
		defer rows.Close()
		for rows.Next() {
			var a edge.Attempt
			if a, err = scanAttempt(rows); err != nil {
				return
			}
			attempts = append(attempts, a)
		}
		err = rows.Err()
	}()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]edge.InFlight, 0, len(attempts))
	for _, a := range attempts {
		r, err := loadRun(ctx, s.reader, a.RunID)
		if err != nil {
			return nil, err
		}
		out = append(out, edge.InFlight{Run: r.Run, Attempt: a})
	}
	return out, nil
}

// ListCancelRequested implements edge.RunnerStore.
func (s *Store) ListCancelRequested(ctx context.Context) ([]edge.Run, error) {
	return s.readRuns(ctx, selectRun+` WHERE r.cancel_requested_at_ms > 0
        AND r.status IN ('dispatching', 'running') ORDER BY r.cancel_requested_at_ms, r.id`)
}

// readRuns runs a selectRun query on the read pool and returns its Runs.
func (s *Store) readRuns(ctx context.Context, query string, args ...any) ([]edge.Run, error) {
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	rs, err := collectRuns(rows)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]edge.Run, len(rs))
	for i, r := range rs {
		out[i] = r.Run
	}
	return out, nil
}

// UpdateAttemptLog implements edge.RunnerStore.
func (s *Store) UpdateAttemptLog(ctx context.Context, ref edge.AttemptRef, size int64, truncated bool) error {
	if size < 0 {
		return errs.Invalidf("logSize", "must not be negative")
	}
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `UPDATE attempts SET log_size = ?, log_truncated = ?
            WHERE run_id = ? AND attempt = ? AND status IN ('starting', 'running')`,
			size, boolInt(truncated), ref.RunID, ref.Number)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return errs.E(errs.Conflict, "status", "attempt %d of run %s is not active", ref.Number, ref.RunID)
		}
		return nil
	})
}
