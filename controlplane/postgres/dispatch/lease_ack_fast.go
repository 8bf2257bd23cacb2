package dispatch

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// The fenced ACK (ADR 0031): the common case of an ack — first delivery,
// every fence holding — as one pipeline, one round trip and one implicit
// transaction (fencedWrite): the plan settings, the session's shared and
// the attempt's exclusive advisory lock (ADR 0010 order, as loadLease),
// the Run's row lock, and one statement that writes only when the
// request's whole fence holds against the rows it writes. The fence is the one loadLease + LeaseFence.Holds + Ack check:
// lease (attempt, generation) naming this run, worker, session,
// generation, offer and token digest, leased and unexpired by database
// time; the session live (not offline, the lease's generation, heartbeat
// lease unexpired); the Attempt in the phase's from-status; for starting
// no cancel intent, for running the Run dispatching. The Run's row is
// locked by a statement of its own in the same pipeline before the write
// (so the write's snapshot is taken after the lock: the event sequence,
// max + 1 under the Run's lock, is stable, and a cancel intent committed
// before it is seen); the lease and Attempt rows are locked by the write's
// own updates, so their FOR UPDATE reads (and lock WAL records) are gone.
//
// No row: something is not the common case — a replay, a cancel intent, a
// drift, an expired lease. Nothing was written (the implicit transaction
// commits nothing) and the ack takes the full path (loadLease and the checks
// of Ack), which decides replay, cancel or conflict under the locks.

// fenceSQL is the fence of the fast statements over l (run_leases), a
// (attempts), r (runs), s (worker_sessions) and n (database now); $1 run,
// $2 attempt, $3 lease generation, $4 worker, $5 session, $6 session
// generation, $7 offer id, $8 token digest.
const fenceSQL = `l.attempt_id = $2::uuid AND l.lease_generation = $3::bigint AND l.run_id = $1::uuid
	AND l.worker_id = $4::uuid AND l.session_id = $5::uuid AND l.session_generation = $6::bigint
	AND l.offer_id = $7::text AND l.token_digest = $8::bytea
	AND l.status = 'leased' AND l.expires_at_ms > n.ms
	AND a.attempt_id = l.attempt_id AND r.run_id = l.run_id AND s.session_id = l.session_id
	AND s.status <> 'offline' AND s.generation = l.session_generation AND s.lease_expires_at_ms > n.ms`

// sqlAckStartingFenced: starting, written only when the fence holds, the
// Attempt is claimed and the Run has no cancel intent. $9 started lease
// ms, $10 the event payload without the attempt number.
const sqlAckStartingFenced = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
f AS (
	SELECT l.lease_id, l.project_id, a.attempt, r.timeout_ms
	FROM ql3.run_leases l, ql3.attempts a, ql3.runs r, ql3.worker_sessions s, n
	WHERE ` + fenceSQL + ` AND a.status = 'claimed' AND r.cancel_requested_at_ms IS NULL),
a AS (
	UPDATE ql3.attempts x SET status = 'starting', deadline_at_ms = n.ms + f.timeout_ms, version = x.version + 1,
		updated_at_ms = n.ms
	FROM f, n WHERE x.attempt_id = $2::uuid AND x.status = 'claimed'
	RETURNING x.attempt),
u AS (
	UPDATE ql3.run_leases x SET expires_at_ms = greatest(x.expires_at_ms, n.ms + $9::bigint),
		version = x.version + 1, updated_at_ms = n.ms
	FROM f, n, a WHERE x.lease_id = f.lease_id AND x.status = 'leased'
	RETURNING x.version, x.expires_at_ms),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, f.project_id, a.attempt, 'run.starting',
		$10::jsonb || jsonb_build_object('attemptNumber', a.attempt), n.ms
	FROM f, a, n
	RETURNING 1)
SELECT u.version, u.expires_at_ms, false, (SELECT count(*) FROM ev) FROM u`

// sqlAckRunningFenced: running, written only when the fence holds, the
// Attempt is starting and the Run dispatching. $9 the event payload
// without the attempt number. Returns the lease's version and expiry and
// the Run's cancel intent (the control answers cancel then, as Ack does).
const sqlAckRunningFenced = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
f AS (
	SELECT l.version, l.expires_at_ms, l.project_id, a.attempt, r.cancel_requested_at_ms IS NOT NULL AS cancel
	FROM ql3.run_leases l, ql3.attempts a, ql3.runs r, ql3.worker_sessions s, n
	WHERE ` + fenceSQL + ` AND a.status = 'starting' AND r.status = 'dispatching'),
a AS (
	UPDATE ql3.attempts x SET status = 'running', started_at_ms = n.ms, version = x.version + 1, updated_at_ms = n.ms
	FROM f, n WHERE x.attempt_id = $2::uuid AND x.status = 'starting'
	RETURNING x.attempt),
ru AS (
	UPDATE ql3.runs x SET status = 'running', started_at_ms = n.ms, version = x.version + 1, updated_at_ms = n.ms
	FROM n, a WHERE x.run_id = $1::uuid AND x.status = 'dispatching'
	RETURNING x.run_id),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, f.project_id, a.attempt, 'run.running',
		$9::jsonb || jsonb_build_object('attemptNumber', a.attempt), n.ms
	FROM f, a, ru, n
	RETURNING 1)
SELECT f.version, f.expires_at_ms, f.cancel, (SELECT count(*) FROM ev) FROM f, a, ru`

// sqlLockRun row-locks the Run before the fenced write (see above).
const sqlLockRun = `SELECT 1 FROM ql3.runs WHERE run_id = $1::uuid FOR UPDATE`

// ackFenced tries the one-round-trip ack. ok false: the full path decides.
func (d *Dispatcher) ackFenced(ctx context.Context, p controlplane.Principal, ack protocol.Ack) (protocol.LeaseControl, bool, error) {
	st, err := d.ackFencedStmt(p, ack)
	if err != nil || st == nil {
		return protocol.LeaseControl{}, false, err
	}
	hit, err := d.fencedWrite(ctx, st.runID, st.attemptID, st.sessionID, st.what, st.scan, st.sql, st.args...)
	if err != nil || !hit {
		return protocol.LeaseControl{}, false, err
	}
	d.stats.fencedAcks.Add(1)
	return st.control(), true, nil
}

// fencedStmt is one fenced write (an ack's or a completion's) with the
// locks it needs: fencedWrite sends one, a lease batch several in one
// pipeline (ADR 0058). scan says whether it wrote; control is an ack's
// answer once scanned.
type fencedStmt struct {
	runID, attemptID, sessionID uuid.UUID
	what                        string
	sql                         string
	args                        []any
	scan                        func(pgx.Row) (bool, error)
	control                     func() protocol.LeaseControl
}

// ackFencedStmt builds the fenced write of ack; nil when ack is not a
// phase the fenced path serves.
func (d *Dispatcher) ackFencedStmt(p controlplane.Principal, ack protocol.Ack) (*fencedStmt, error) {
	ref := ack.LeaseRef
	var ids [4]uuid.UUID
	for i, f := range []struct{ field, s string }{{"runId", ref.RunID}, {"attemptId", ref.AttemptID},
		{"sessionId", ref.SessionID}, {"workerId", p.WorkerID}} {
		id, err := parseID(f.field, f.s)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	runID, attemptID, sessionID, workerID := ids[0], ids[1], ids[2], ids[3]
	digest := ref.LeaseToken.Digest()
	args := []any{runID, attemptID, ref.LeaseGeneration, workerID, sessionID, ref.Generation, ref.OfferID, digest[:]}
	var sql string
	var payload run.Payload
	switch ack.Phase {
	case protocol.AckStarting:
		sql = sqlAckStartingFenced
		payload = run.Payload{AttemptID: attemptID.String(), From: string(run.AttemptClaimed), To: string(run.AttemptStarting)}
	case protocol.AckRunning:
		sql = sqlAckRunningFenced
		payload = run.Payload{AttemptID: attemptID.String(), From: string(run.RunDispatching), To: string(run.RunRunning)}
	default:
		return nil, nil
	}
	raw, err := payload.Encode()
	if err != nil {
		return nil, errs.E(errs.Internal, "", "%s payload: %v", ack.Phase, err)
	}
	if ack.Phase == protocol.AckStarting {
		args = append(args, d.opts.Lease.StartedMs)
	}
	args = append(args, string(raw))
	c := protocol.LeaseControl{V: protocol.Version, RunID: runID.String(), AttemptID: attemptID.String(),
		LeaseGeneration: ref.LeaseGeneration, Action: protocol.LeaseExtend}
	var cancel bool
	st := &fencedStmt{runID: runID, attemptID: attemptID, sessionID: sessionID, what: string(ack.Phase) + " ack",
		sql: sql, args: args}
	st.scan = func(row pgx.Row) (bool, error) {
		var events int64
		err := row.Scan(&c.LeaseVersion, &c.LeaseExpiresAtMs, &cancel, &events)
		switch {
		case err == pgx.ErrNoRows:
			return false, nil
		case err != nil:
			return false, err
		case events != 1:
			// Locks are held and the fence held: only a schema drift gets
			// here. Its writes commit at the Sync all the same.
			return false, errs.E(errs.Internal, "", "%s ack wrote %d events", ack.Phase, events)
		}
		return true, nil
	}
	st.control = func() protocol.LeaseControl {
		out := c
		if cancel {
			out.Action, out.CancelGraceMs = protocol.LeaseCancel, d.opts.Lease.CancelGraceMs
		}
		return out
	}
	return st, nil
}

// fencedWrite sends the plan settings, the session's shared and the
// attempt's exclusive advisory lock, the Run's row lock and sql as one
// pipeline with a single Sync: one implicit transaction (as the pull's
// first round trip), so no BEGIN and COMMIT statements — the transaction
// commits at the Sync when every statement succeeded and rolls back when
// one failed (the server skips the rest of the pipeline). scan reads sql's
// row and says whether it wrote (hit); a miss commits nothing.
func (d *Dispatcher) fencedWrite(ctx context.Context, runID, attemptID, sessionID uuid.UUID, what string,
	scan func(pgx.Row) (bool, error), sql string, args ...any) (bool, error) {
	var hit bool
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		b := &pgx.Batch{}
		b.Queue(postgres.PlanSettingsSQL)
		b.Queue(postgres.SQLLockShared, postgres.LockClassSession, postgres.LockObjectKey(sessionID))
		b.Queue(postgres.SQLLockAttempts, postgres.LockClassAttempt, []int32{postgres.LockObjectKey(attemptID)})
		b.Queue(sqlLockRun, runID)
		b.Queue(sql, args...)
		br := tx.SendBatch(ctx, b)
		for range 4 {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return postgres.Errorf(err, "postgres: %s locks", what)
			}
		}
		var err error
		if hit, err = scan(br.QueryRow()); err != nil {
			_ = br.Close()
			return postgres.Errorf(err, "postgres: %s", what)
		}
		// Close reads through the Sync: the implicit transaction's commit.
		if err := br.Close(); err != nil {
			return postgres.Errorf(err, "postgres: %s", what)
		}
		return nil
	})
	return hit, err
}
