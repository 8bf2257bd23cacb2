package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

// Completion (ADR 0011, after QL3 ADR-0117). One transaction: the lease
// completed, the Attempt ended, the Run terminal or retry_wait by its
// retry policy, both log streams closed, one status event. A cancel or
// timeout intent on the Run wins over what the process did. An exact
// replay (same outcome digest) answers duplicate; a genuine lease whose
// attempt already ended otherwise (swept, lost, cancelled) answers late
// and records one attempt.late_callback event; anything else is a conflict.

// completionDigestDomain separates completion digests from other SHA-256s.
const completionDigestDomain = "ql3/completion-outcome/v1"

// completionDigest covers the outcome facts of c, never its lease
// reference or token.
func completionDigest(c protocol.Completion) [sha256.Size]byte {
	var b bytes.Buffer
	b.WriteString(completionDigestDomain)
	b.WriteByte(0)
	for _, s := range []string{string(c.Status), string(c.ErrorClass), c.Signal} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	exit := int64(-1)
	if c.ExitCode != nil {
		exit = int64(*c.ExitCode)
	}
	trunc := int64(0)
	if c.LogTruncated {
		trunc = 1
	}
	for _, n := range []int64{exit, c.StartedAtMs, c.FinishedAtMs, c.StdoutBytes, c.StderrBytes, trunc} {
		_ = binary.Write(&b, binary.BigEndian, n)
	}
	if c.MaskedCount != 0 { // after the others: digests without it are unchanged
		_ = binary.Write(&b, binary.BigEndian, c.MaskedCount)
	}
	return sha256.Sum256(b.Bytes())
}

// effectiveEnd is how the attempt ends: a timeout intent makes it
// timed_out, any other cancel intent cancelled; otherwise what the worker
// reported.
func effectiveEnd(c protocol.Completion, cancelRequested bool, reason string) (run.AttemptStatus, run.ErrorClass, bool) {
	switch {
	case cancelRequested && reason == "timeout":
		return run.AttemptTimedOut, run.ErrorTimeout, c.Status != run.AttemptTimedOut
	case cancelRequested:
		return run.AttemptCancelled, run.ErrorCancelledByUser, c.Status != run.AttemptCancelled
	}
	return c.Status, c.ErrorClass, false
}

const sqlComplete = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
a AS (
	UPDATE ql3.attempts SET status = $4::text, error_class = nullif($5::text, ''), exit_code = $6::int,
		signal = nullif($7::text, ''), stdout_bytes = $8::bigint, stderr_bytes = $9::bigint,
		completion_digest = $10::bytea, finished_at_ms = n.ms, version = version + 1, updated_at_ms = n.ms,
		masked_count = $20::bigint
	FROM n WHERE attempt_id = $2::uuid AND status = $11::text
	RETURNING attempt),
r AS (
	UPDATE ql3.runs SET status = $12::text, error_class = nullif($5::text, ''), version = version + 1,
		updated_at_ms = n.ms,
		finished_at_ms = CASE WHEN $12::text IN ('succeeded', 'failed', 'cancelled', 'timed_out') THEN n.ms END,
		not_before_ms = CASE WHEN $12::text = 'retry_wait' THEN n.ms + $13::bigint ELSE not_before_ms END
	FROM n, a WHERE run_id = $1::uuid AND status = $14::text
	RETURNING not_before_ms),
l AS (
	UPDATE ql3.run_leases SET status = 'completed', ended_at_ms = n.ms, updated_at_ms = n.ms, version = version + 1
	FROM n, a WHERE lease_id = $3::uuid AND status = 'leased'
	RETURNING 1),
s AS (
	INSERT INTO ql3.run_log_streams AS x (run_id, attempt, stream, project_id, closed, truncated, created_at_ms, updated_at_ms)
	SELECT $1::uuid, a.attempt, v.stream, $15::uuid, true, v.reported > 0, n.ms, n.ms
	FROM a, n, (VALUES ('stdout', $8::bigint, $18::boolean), ('stderr', $9::bigint, $19::boolean)) AS v(stream, reported, keep)
	WHERE v.keep
	ON CONFLICT (run_id, attempt, stream) DO UPDATE SET closed = true,
		truncated = x.truncated OR x.length_bytes <> (CASE x.stream WHEN 'stdout' THEN $8::bigint ELSE $9::bigint END),
		updated_at_ms = greatest(x.created_at_ms, EXCLUDED.updated_at_ms)
	RETURNING 1),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, $15::uuid, a.attempt, $16::text, $17::jsonb, n.ms FROM a, r, n
	RETURNING 1)
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM r), (SELECT count(*) FROM l), (SELECT count(*) FROM s),
	(SELECT count(*) FROM ev)`

const sqlLateCallback = `WITH ins AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, $2::uuid, $3::int, 'attempt.late_callback', $4::jsonb, ` + postgres.DBNowMs + `
	WHERE NOT EXISTS (SELECT 1 FROM ql3.run_events WHERE run_id = $1::uuid AND attempt = $3::int
		AND type = 'attempt.late_callback')
	RETURNING 1)
SELECT count(*) FROM ins`

// Complete implements controlplane.LeasePort.
func (d *Dispatcher) Complete(ctx context.Context, p controlplane.Principal, c protocol.Completion) (protocol.CompletionReceipt, error) {
	if err := c.Validate(); err != nil {
		return protocol.CompletionReceipt{}, err
	}
	digest := completionDigest(c)
	// A first report of success in one round trip (ADR 0031); anything
	// else takes the full path below.
	if ok, err := d.completeFenced(ctx, p, c, digest); err != nil || ok {
		if err != nil {
			return protocol.CompletionReceipt{}, err
		}
		return protocol.CompletionReceipt{V: protocol.Version, AttemptID: c.AttemptID, Disposition: protocol.Recorded}, nil
	}
	var disposition protocol.Disposition
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		l, err := loadLease(ctx, tx, p, c.LeaseRef, true)
		if err != nil {
			return err
		}
		if c.FinishedAtMs > l.nowMs+MaxCompletionSkewMs {
			return errs.Invalidf("finishedAtMs", "is more than %d ms after the authority's clock", MaxCompletionSkewMs)
		}
		if l.completionDigest != nil {
			if bytes.Equal(l.completionDigest, digest[:]) {
				disposition = protocol.Duplicate
				return nil
			}
			return errs.E(errs.Conflict, "status", "a different completion was recorded for this attempt")
		}
		if l.leaseStatus != "leased" || l.attemptStatus.Terminal() {
			disposition = protocol.Late
			return d.recordLate(ctx, tx, l, c)
		}
		disposition = protocol.Recorded
		return d.recordCompletion(ctx, tx, l, c, digest)
	})
	if err != nil {
		return protocol.CompletionReceipt{}, err
	}
	return protocol.CompletionReceipt{V: protocol.Version, AttemptID: c.AttemptID, Disposition: disposition}, nil
}

func (d *Dispatcher) recordLate(ctx context.Context, tx *dtx, l *leaseRow, c protocol.Completion) error {
	payload, err := run.Payload{AttemptID: l.attemptID.String(), AttemptNumber: int(l.attemptNumber),
		To: string(c.Status), ErrorClass: c.ErrorClass, ExitCode: c.ExitCode, Signal: c.Signal,
		Reason: "late_completion", LeaseGeneration: l.leaseGeneration}.Encode()
	if err != nil {
		return errs.E(errs.Internal, "", "late payload: %v", err)
	}
	if err := tx.commitWith(ctx, func(r pgx.Row) error {
		var n int64
		return r.Scan(&n)
	}, sqlLateCallback, l.runID, l.projectID, l.attemptNumber, string(payload)); err != nil {
		return postgres.Errorf(err, "postgres: record late completion")
	}
	return nil
}

func (d *Dispatcher) recordCompletion(ctx context.Context, tx *dtx, l *leaseRow, c protocol.Completion, digest [sha256.Size]byte) error {
	end, class, overridden := effectiveEnd(c, l.cancelRequested, l.cancelReason)
	if l.attemptStatus == run.AttemptClaimed && end != run.AttemptCancelled {
		// Only a cancelled start (cancel intent at the starting ACK) ends
		// an attempt that never passed the start barrier.
		return errs.E(errs.Conflict, "status", "attempt never passed the start barrier")
	}
	if err := run.TransitionAttempt(l.attemptStatus, end); err != nil {
		return err
	}
	retry := run.Retry{MaxAttempts: int(l.retryMax), RetryOnLost: l.retryOnLost}
	runEnd, err := run.AfterAttempt(end, class, int(l.attemptNumber), retry)
	if err != nil {
		return errs.E(errs.Internal, "", "retry decision: %v", err)
	}
	event, err := run.EventFor(runEnd)
	if err != nil {
		return errs.E(errs.Internal, "", "%v", err)
	}
	if err := run.CheckEvent(l.runStatus, runEnd, event); err != nil {
		if errs.Code(err) == errs.Conflict {
			return errs.E(errs.Conflict, "status", "run is %s: %s is not recorded before the running ACK", l.runStatus, runEnd)
		}
		return err
	}
	var backoff int64
	if runEnd == run.RunRetryWait {
		backoff = spec.RetryPolicy{BackoffBaseMs: l.backoffBaseMs, BackoffMaxMs: l.backoffMaxMs}.BackoffMs(int(l.attemptNumber))
	}
	streams := l.streams
	pl := run.Payload{AttemptID: l.attemptID.String(), AttemptNumber: int(l.attemptNumber),
		From: string(l.runStatus), To: string(runEnd), ErrorClass: class, ExitCode: c.ExitCode, Signal: c.Signal,
		StdoutBytes: c.StdoutBytes, StderrBytes: c.StderrBytes, LogTruncated: c.LogTruncated}
	switch {
	case overridden:
		pl.Reason = "cancel_intent:" + l.cancelReason
	case streams["stdout"].length != c.StdoutBytes || streams["stderr"].length != c.StderrBytes:
		pl.Reason = "log_length_mismatch"
	}
	if runEnd == run.RunRetryWait {
		pl.RetryAtMs = l.nowMs + backoff // display; the row uses the statement's clock
	}
	payload, err := pl.Encode()
	if err != nil {
		return errs.E(errs.Internal, "", "completion payload: %v", err)
	}
	// A stream that received nothing and is reported empty gets no row:
	// absent reads as empty, and the ended attempt takes no more output,
	// so a closed empty row would say nothing (two row versions less per
	// silent run).
	keepStdout, keepStderr := streamRowNeeded(streams, "stdout", c.StdoutBytes), streamRowNeeded(streams, "stderr", c.StderrBytes)
	wantStreams := int64(0)
	for _, k := range []bool{keepStdout, keepStderr} {
		if k {
			wantStreams++
		}
	}
	var exit *int32
	if c.ExitCode != nil {
		v := int32(*c.ExitCode)
		exit = &v
	}
	err = tx.commitWith(ctx, func(r pgx.Row) error {
		var na, nr, nl, ns, nev int64
		if err := r.Scan(&na, &nr, &nl, &ns, &nev); err != nil {
			return err
		}
		if na != 1 || nr != 1 || nl != 1 || ns != wantStreams || nev != 1 {
			// Row locks are held: only a schema drift gets here. Roll back.
			return errs.E(errs.Internal, "", "completion wrote attempt %d run %d lease %d streams %d events %d", na, nr, nl, ns, nev)
		}
		return nil
	}, sqlComplete, l.runID, l.attemptID, l.leaseID, string(end), string(class), exit, c.Signal, c.StdoutBytes,
		c.StderrBytes, digest[:], string(l.attemptStatus), string(runEnd), backoff, string(l.runStatus), l.projectID,
		string(event), string(payload), keepStdout, keepStderr, c.MaskedCount)
	if err != nil {
		return postgres.Errorf(err, "postgres: record completion")
	}
	return nil
}

// streamRowNeeded: the completion closes a stream's row when the stream
// has one or the worker reports bytes for it (then the stored log is
// short and the new row records the truncation).
func streamRowNeeded(streams map[string]logStreamState, name string, reported int64) bool {
	_, ok := streams[name]
	return ok || reported > 0
}
