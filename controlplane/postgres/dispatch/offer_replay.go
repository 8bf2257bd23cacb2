package dispatch

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// Offer replay (ADR-0108 §5, ADR 0009). The database keeps only the
// SHA-256 of the lease token, so a worker that lost the response to a
// successful claim repeats the identical request and the offer is rebuilt
// from the durable lease, the pinned revision and the run.dispatched event
// of that claim — no offers table, no second lease, no second event. Any
// drift (token, lease no longer live, attempt moved on, revision changed,
// session replaced) is a conflict the worker must not execute.

// sqlReplayLease finds the lease a (session, offerId) already made.
const sqlReplayLease = `SELECT l.run_id, l.attempt_id, l.attempt, l.worker_id, l.session_generation, l.token_digest,
	l.lease_generation, l.version, l.status, l.expires_at_ms,
	a.status, coalesce(a.offer_id, ''), a.session_id, r.status, r.cancel_requested_at_ms IS NOT NULL,
	r.execution_revision_id, r.execution_digest, r.timeout_ms, r.scheduled_for_ms, n.ms,
	coalesce((SELECT e.payload::text FROM ql3.run_events e
		WHERE e.run_id = l.run_id AND e.type = 'run.dispatched' ORDER BY e.sequence DESC LIMIT 1), '{}'),
	coalesce((SELECT p.entries::text FROM ql3.attempt_envs p WHERE p.attempt_id = l.attempt_id), '')
FROM ql3.run_leases l
JOIN ql3.attempts a ON a.attempt_id = l.attempt_id
JOIN ql3.runs r ON r.run_id = l.run_id
CROSS JOIN (SELECT ` + postgres.DBNowMs + ` AS ms) n
WHERE l.session_id = $1::uuid AND l.offer_id = $2::text`

type replayFacts struct {
	runID, attemptID  uuid.UUID
	attemptNumber     int32
	workerID          uuid.UUID
	sessionGeneration int64
	tokenDigest       []byte
	leaseGeneration   int64
	leaseVersion      int64
	leaseStatus       string
	expiresAtMs       int64
	attemptStatus     string
	attemptOfferID    string
	attemptSession    *uuid.UUID
	runStatus         string
	cancelRequested   bool
	revisionID        uuid.UUID
	revisionDigest    []byte
	timeoutMs         int64
	scheduledForMs    int64
	nowMs             int64
	dispatched        string
	pinnedEnv         string // ql3.attempt_envs.entries, "" when none
}

func scanReplay(row pgx.Row) (*replayFacts, error) {
	f := &replayFacts{}
	err := row.Scan(&f.runID, &f.attemptID, &f.attemptNumber, &f.workerID, &f.sessionGeneration, &f.tokenDigest,
		&f.leaseGeneration, &f.leaseVersion, &f.leaseStatus, &f.expiresAtMs,
		&f.attemptStatus, &f.attemptOfferID, &f.attemptSession, &f.runStatus, &f.cancelRequested,
		&f.revisionID, &f.revisionDigest, &f.timeoutMs, &f.scheduledForMs, &f.nowMs, &f.dispatched, &f.pinnedEnv)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, postgres.Errorf(err, "postgres: read replayed lease")
	}
	return f, nil
}

func replayConflict(field, msg string) error {
	return errs.E(errs.Conflict, field, "offer replay: %s", msg)
}

// rebuildOffer answers an exact replay with the offer the claim made.
func (d *Dispatcher) rebuildOffer(ctx context.Context, q querier, f *replayFacts, workerID, sessionID uuid.UUID,
	req protocol.OfferPullRequest, digest [sha256.Size]byte) (*protocol.Offer, error) {
	// The token first, in constant time: nothing about the lease is
	// answered to a request that does not hold its capability.
	if subtle.ConstantTimeCompare(f.tokenDigest, digest[:]) != 1 {
		return nil, replayConflict("leaseToken", "this offer id was claimed with another lease token")
	}
	switch {
	case f.workerID != workerID || f.sessionGeneration != req.Generation:
		return nil, replayConflict("sessionId", "the lease belongs to another session")
	case f.leaseStatus != "leased":
		return nil, replayConflict("offerId", "the lease is no longer live")
	case f.expiresAtMs <= f.nowMs:
		return nil, replayConflict("offerId", "the lease expired")
	case f.attemptStatus != string(run.AttemptClaimed) || f.attemptOfferID != req.OfferID ||
		f.attemptSession == nil || *f.attemptSession != sessionID:
		return nil, replayConflict("attemptId", "the attempt moved on")
	case f.runStatus != string(run.RunDispatching) || f.cancelRequested:
		return nil, replayConflict("runId", "the run moved on")
	}
	claimed, err := run.DecodePayload([]byte(f.dispatched))
	if err != nil {
		return nil, replayConflict("runId", "the dispatch record does not decode")
	}
	rev, err := d.revision(ctx, q, f.revisionID)
	if err != nil {
		return nil, err
	}
	if claimed.OfferID != req.OfferID || claimed.LeaseGeneration != f.leaseGeneration ||
		claimed.AttemptID != f.attemptID.String() || claimed.ExecutionRevisionID != f.revisionID.String() ||
		claimed.ExecutionRevisionDigest != rev.digest.String() || !slices.Equal(rev.digest[:], f.revisionDigest) {
		return nil, replayConflict("executionRevisionId", "the attempt or its revision changed since the claim")
	}
	vars, err := envstore.OfferEnv(f.pinnedEnv, d.opts.Env, rev.spec)
	if err != nil {
		return nil, err
	}
	d.stats.replays.Add(1)
	return buildOffer(rev, offerFacts{env: vars, runID: f.runID, attemptID: f.attemptID, attemptNumber: int(f.attemptNumber),
		workerID: workerID, sessionID: sessionID, generation: req.Generation, offerID: req.OfferID,
		leaseGeneration: f.leaseGeneration, leaseVersion: f.leaseVersion, expiresAtMs: f.expiresAtMs,
		tokenDigest: digest, timeoutMs: f.timeoutMs, scheduledForMs: f.scheduledForMs}), nil
}
