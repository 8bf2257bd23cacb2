package dispatch

import (
	"context"
	"crypto/sha256"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// The per-attempt lifecycle (ack, log, complete; ADR 0011) starts the same
// way: in one round trip, the session's shared advisory lock, the attempt's
// exclusive one (ADR 0010 order), then the lease with its Attempt, Run and
// session, the first three row-locked. Then the full LeaseFence of the
// request is compared with the durable lease (token digest in constant
// time); a fence that does not hold is a conflict and nothing changes.

const sqlLoadLease = `SELECT l.lease_id, l.run_id, l.worker_id, l.session_id, l.session_generation, l.offer_id,
	l.token_digest, l.lease_generation, l.version, l.status, l.expires_at_ms,
	a.attempt, a.status, a.version, a.completion_digest, r.status, r.version, r.cancel_requested_at_ms IS NOT NULL,
	coalesce(r.cancel_reason, ''), r.timeout_ms, r.retry_max_attempts, r.retry_backoff_base_ms,
	r.retry_backoff_max_ms, r.retry_on_lost, r.project_id, s.status, s.generation, s.lease_expires_at_ms, n.ms
FROM ql3.run_leases l
JOIN ql3.attempts a ON a.attempt_id = l.attempt_id
JOIN ql3.runs r ON r.run_id = l.run_id
JOIN ql3.worker_sessions s ON s.session_id = l.session_id
CROSS JOIN (SELECT ` + postgres.DBNowMs + ` AS ms) n
WHERE l.attempt_id = $1::uuid AND l.lease_generation = $2::bigint
FOR UPDATE OF l, a, r`

// leaseRow is a lease as the lifecycle transactions read it.
type leaseRow struct {
	leaseID, runID, workerID, sessionID uuid.UUID
	sessionGeneration                   int64
	offerID                             string
	tokenDigest                         []byte
	leaseGeneration, leaseVersion       int64
	leaseStatus                         string
	expiresAtMs                         int64
	attemptID                           uuid.UUID
	attemptNumber                       int32
	attemptStatus                       run.AttemptStatus
	attemptVersion                      int64
	completionDigest                    []byte
	runStatus                           run.RunStatus
	runVersion                          int64
	cancelRequested                     bool
	cancelReason                        string
	timeoutMs                           int64
	retryMax                            int32
	backoffBaseMs, backoffMaxMs         int64
	retryOnLost                         bool
	projectID                           uuid.UUID
	sessionStatus                       string
	sessionLiveGeneration               int64
	sessionExpiresAtMs                  int64
	nowMs                               int64
	streams                             map[string]logStreamState // with withStreams
}

// loadLease locks and reads the lease ref names and checks that the
// principal's worker and the request's whole fence match it, except the
// expiry (callers decide what an expired lease still allows).
func loadLease(ctx context.Context, tx *dtx, p controlplane.Principal, ref protocol.LeaseRef, withStreams bool) (*leaseRow, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	sessionID, err := parseID("sessionId", ref.SessionID)
	if err != nil {
		return nil, err
	}
	attemptID, err := parseID("attemptId", ref.AttemptID)
	if err != nil {
		return nil, err
	}
	if _, err := parseID("runId", ref.RunID); err != nil {
		return nil, err
	}
	workerID, err := parseID("workerId", p.WorkerID)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	b.Queue(postgres.SQLLockShared, postgres.LockClassSession, postgres.LockObjectKey(sessionID))
	b.Queue(postgres.SQLLockAttempts, postgres.LockClassAttempt, []int32{postgres.LockObjectKey(attemptID)})
	b.Queue(sqlLoadLease, attemptID, ref.LeaseGeneration)
	if withStreams {
		b.Queue(sqlLogStreams, attemptID)
	}
	br, err := tx.Begin(ctx, b)
	if err != nil {
		return nil, postgres.Errorf(err, "postgres: begin")
	}
	defer func() { _ = br.Close() }()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, postgres.Errorf(err, "postgres: lease locks")
		}
	}
	l := &leaseRow{attemptID: attemptID}
	var attemptStatus, runStatus string
	err = br.QueryRow().Scan(&l.leaseID, &l.runID, &l.workerID, &l.sessionID, &l.sessionGeneration, &l.offerID,
		&l.tokenDigest, &l.leaseGeneration, &l.leaseVersion, &l.leaseStatus, &l.expiresAtMs,
		&l.attemptNumber, &attemptStatus, &l.attemptVersion, &l.completionDigest, &runStatus, &l.runVersion,
		&l.cancelRequested, &l.cancelReason, &l.timeoutMs, &l.retryMax, &l.backoffBaseMs, &l.backoffMaxMs,
		&l.retryOnLost, &l.projectID, &l.sessionStatus, &l.sessionLiveGeneration, &l.sessionExpiresAtMs, &l.nowMs)
	if err == pgx.ErrNoRows {
		return nil, errs.E(errs.Conflict, "attemptId", "no such lease")
	}
	if err != nil {
		return nil, postgres.Errorf(err, "postgres: read lease")
	}
	if withStreams {
		if l.streams, err = scanLogStreams(br); err != nil {
			return nil, err
		}
	}
	if err := br.Close(); err != nil {
		return nil, postgres.Errorf(err, "postgres: lease batch")
	}
	l.attemptStatus, l.runStatus = run.AttemptStatus(attemptStatus), run.RunStatus(runStatus)
	var digest [sha256.Size]byte
	copy(digest[:], l.tokenDigest)
	observed := fence.LeaseFence{RunID: l.runID.String(), AttemptID: attemptID.String(), WorkerID: l.workerID.String(),
		SessionID: l.sessionID.String(), SessionGeneration: l.sessionGeneration, LeaseGeneration: l.leaseGeneration,
		LeaseVersion: l.leaseVersion, ExpiresAtMs: l.expiresAtMs, TokenDigest: digest, OfferID: l.offerID}
	// Version and expiry are not on the wire (they change with renewals):
	// the request is compared on identity, token and generation; expiry is
	// each caller's check. Passing now = 0 leaves "expired" out of Holds.
	want := ref.Fence(workerID.String(), l.leaseVersion, l.expiresAtMs)
	if err := want.Holds(observed, 0); err != nil {
		return nil, err
	}
	return l, nil
}

// sessionLive: the lease's session is the live generation, not offline
// and its heartbeat lease has not passed by database time.
func (l *leaseRow) sessionLive() bool {
	return l.sessionStatus != "offline" && l.sessionLiveGeneration == l.sessionGeneration &&
		l.sessionExpiresAtMs > l.nowMs
}

// control is the authority's word on a held lease.
func (l *leaseRow) control(graceMs int64) protocol.LeaseControl {
	c := protocol.LeaseControl{V: protocol.Version, RunID: l.runID.String(), AttemptID: l.attemptID.String(),
		LeaseGeneration: l.leaseGeneration, LeaseVersion: l.leaseVersion, LeaseExpiresAtMs: l.expiresAtMs,
		Action: protocol.LeaseExtend}
	if l.cancelRequested {
		c.Action, c.CancelGraceMs = protocol.LeaseCancel, graceMs
	}
	return c
}

// nextSeq is the SQL of the next event sequence of run $1 (the caller
// holds the Run's row lock, so it is stable).
const nextSeq = `(SELECT coalesce(max(sequence), 0) FROM ql3.run_events WHERE run_id = $1::uuid)`
