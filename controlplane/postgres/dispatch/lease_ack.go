package dispatch

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// Acks (ADR 0011, after QL3 ADR-0109). starting passes the start barrier:
// Attempt claimed → starting, its durable deadline fixed at database now +
// the Run's pinned timeout, the lease becomes a started lease
// (Lease.StartedMs, renewed by heartbeats), one run.starting event; the Run
// stays dispatching. running: Attempt starting → running and Run
// dispatching → running, both started at database time, one run.running
// event. An ack the attempt already passed is an exact replay and answers
// the current control without writing.

const sqlAckStarting = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
a AS (
	UPDATE ql3.attempts SET status = 'starting', deadline_at_ms = n.ms + $4::bigint, version = version + 1,
		updated_at_ms = n.ms
	FROM n WHERE attempt_id = $2::uuid AND status = 'claimed'
	RETURNING attempt),
l AS (
	UPDATE ql3.run_leases SET expires_at_ms = greatest(expires_at_ms, n.ms + $5::bigint), version = version + 1,
		updated_at_ms = n.ms
	FROM n, a WHERE lease_id = $3::uuid AND status = 'leased'
	RETURNING version, expires_at_ms),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, $6::uuid, a.attempt, 'run.starting', $7::jsonb, n.ms FROM a, n
	RETURNING 1)
SELECT l.version, l.expires_at_ms, (SELECT count(*) FROM ev) FROM l`

const sqlAckRunning = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
a AS (
	UPDATE ql3.attempts SET status = 'running', started_at_ms = n.ms, version = version + 1, updated_at_ms = n.ms
	FROM n WHERE attempt_id = $2::uuid AND status = 'starting'
	RETURNING attempt),
r AS (
	UPDATE ql3.runs SET status = 'running', started_at_ms = n.ms, version = version + 1, updated_at_ms = n.ms
	FROM n, a WHERE run_id = $1::uuid AND status = 'dispatching'
	RETURNING run_id),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, $3::uuid, a.attempt, 'run.running', $4::jsonb, n.ms FROM a, r, n
	RETURNING 1)
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM r), (SELECT count(*) FROM ev)`

// Ack implements controlplane.LeasePort.
func (d *Dispatcher) Ack(ctx context.Context, p controlplane.Principal, ack protocol.Ack) (protocol.LeaseControl, error) {
	if err := ack.Validate(); err != nil {
		return protocol.LeaseControl{}, err
	}
	// The common case in one round trip (ADR 0031); anything else —
	// replay, cancel intent, drift — takes the full path below.
	if c, ok, err := d.ackFenced(ctx, p, ack); err != nil || ok {
		return c, err
	}
	return d.ackFull(ctx, p, ack)
}

// ackFull is the full path of an ack: the lease read under the locks and
// Ack's checks (replay, cancel, drift), then the write.
func (d *Dispatcher) ackFull(ctx context.Context, p controlplane.Principal, ack protocol.Ack) (protocol.LeaseControl, error) {
	var out protocol.LeaseControl
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		l, err := loadLease(ctx, tx, p, ack.LeaseRef, false)
		if err != nil {
			return err
		}
		if l.leaseStatus != "leased" {
			return errs.E(errs.Conflict, "leaseGeneration", "the lease is no longer live")
		}
		if l.expiresAtMs <= l.nowMs {
			return errs.E(errs.Conflict, "leaseGeneration", "the lease expired")
		}
		if !l.sessionLive() {
			return errs.E(errs.Conflict, "sessionId", "the session no longer holds leases")
		}
		switch ack.Phase {
		case protocol.AckStarting:
			err = d.ackStarting(ctx, tx, l)
		case protocol.AckRunning:
			err = d.ackRunning(ctx, tx, l)
		}
		if err != nil {
			return err
		}
		out = l.control(d.opts.Lease.CancelGraceMs)
		return nil
	})
	return out, err
}

func (d *Dispatcher) ackStarting(ctx context.Context, tx *dtx, l *leaseRow) error {
	switch l.attemptStatus {
	case run.AttemptStarting, run.AttemptRunning:
		return nil // replay: the barrier is passed
	case run.AttemptClaimed:
	default:
		return errs.E(errs.Conflict, "phase", "attempt is %s", l.attemptStatus)
	}
	if l.cancelRequested {
		// A Run with a cancel intent does not pass the start barrier; the
		// worker gets cancel and reports a cancelled start (never spawns).
		return nil
	}
	payload, err := run.Payload{AttemptID: l.attemptID.String(), AttemptNumber: int(l.attemptNumber),
		From: string(run.AttemptClaimed), To: string(run.AttemptStarting)}.Encode()
	if err != nil {
		return errs.E(errs.Internal, "", "starting payload: %v", err)
	}
	var events int64
	err = tx.CommitWith(ctx, func(r pgx.Row) error {
		err := r.Scan(&l.leaseVersion, &l.expiresAtMs, &events)
		if err == pgx.ErrNoRows || err == nil && events != 1 {
			// Locks are held: only a schema drift gets here. Roll back.
			return errs.E(errs.Internal, "", "starting ack wrote nothing")
		}
		return err
	}, sqlAckStarting, l.runID, l.attemptID, l.leaseID, l.timeoutMs, d.opts.Lease.StartedMs, l.projectID, string(payload))
	if err != nil {
		return postgres.Errorf(err, "postgres: starting ack")
	}
	return nil
}

func (d *Dispatcher) ackRunning(ctx context.Context, tx *dtx, l *leaseRow) error {
	switch l.attemptStatus {
	case run.AttemptRunning:
		return nil // replay
	case run.AttemptStarting:
	case run.AttemptClaimed:
		return errs.E(errs.Conflict, "phase", "running before the starting ACK")
	default:
		return errs.E(errs.Conflict, "phase", "attempt is %s", l.attemptStatus)
	}
	if l.runStatus != run.RunDispatching {
		return errs.E(errs.Conflict, "phase", "run is %s", l.runStatus)
	}
	payload, err := run.Payload{AttemptID: l.attemptID.String(), AttemptNumber: int(l.attemptNumber),
		From: string(run.RunDispatching), To: string(run.RunRunning)}.Encode()
	if err != nil {
		return errs.E(errs.Internal, "", "running payload: %v", err)
	}
	err = tx.CommitWith(ctx, func(row pgx.Row) error {
		var a, r, ev int64
		if err := row.Scan(&a, &r, &ev); err != nil {
			return err
		}
		if a != 1 || r != 1 || ev != 1 {
			// Row locks are held: this only happens on a schema drift. Roll back.
			return errs.E(errs.Internal, "", "running ack wrote attempt %d, run %d, events %d", a, r, ev)
		}
		return nil
	}, sqlAckRunning, l.runID, l.attemptID, l.projectID, string(payload))
	if err != nil {
		return postgres.Errorf(err, "postgres: running ack")
	}
	return nil
}
