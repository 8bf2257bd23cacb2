package postgres

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/ingress"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement/matcher"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// Offer pull (ADR-0108, ADR 0009), on the runtime role:
//
//  1. one round trip, no transaction, no lock: the session with its
//     live-lease count and the database time, the lease this (session,
//     offerId) already holds if the request is a replay, the token check
//     and the first candidate page;
//  2. placement of each candidate's pinned revision against the session's
//     capabilities, in Go (compiled revisions and prepared capabilities are
//     cached: both are immutable); further pages while none is eligible;
//  3. when a page holds an eligible candidate, the claim transaction: the
//     session's exclusive advisory lock with the session and the first page
//     re-read (ADR 0010: free capacity is decided under it, so it is never
//     oversold), then one
//     claim statement per try until one succeeds or the tries are spent —
//     the Run compare-and-set (FOR UPDATE SKIP LOCKED, so concurrent pulls
//     never wait on each other's candidates), the Attempt, an expired
//     unstarted lease released, the lease and the events — and COMMIT.
//
// An idle pull (nothing runnable) is therefore one round trip that writes
// nothing and takes no lock.

// DispatchStats counts what pulls did, for metrics and tests. PagesRead
// and CandidatesRead count every page read, so a claiming pull counts its
// first page twice (the unlocked idle check and the re-read under the lock).
type DispatchStats struct {
	Pulls, Offers, Replays, Empty   int64
	PagesRead, CandidatesRead       int64
	Ineligible, ClaimMisses, Truncs int64
}

type dispatchCounters struct {
	pulls, offers, replays, empty      atomic.Int64
	pages, candidates                  atomic.Int64
	ineligible, claimMisses, truncated atomic.Int64
}

// Stats returns the counters since the Dispatcher was made.
func (d *Dispatcher) Stats() DispatchStats {
	c := &d.stats
	return DispatchStats{Pulls: c.pulls.Load(), Offers: c.offers.Load(), Replays: c.replays.Load(),
		Empty: c.empty.Load(), PagesRead: c.pages.Load(), CandidatesRead: c.candidates.Load(),
		Ineligible: c.ineligible.Load(), ClaimMisses: c.claimMisses.Load(), Truncs: c.truncated.Load()}
}

const sqlPullSession = `SELECT s.worker_id, s.generation, s.status, s.capacity, s.capabilities::text,
	s.capabilities_digest, s.lease_expires_at_ms, n.ms,
	(SELECT count(*) FROM ql3.run_leases l
		WHERE l.session_id = s.session_id AND l.status = 'leased' AND l.expires_at_ms > n.ms)
FROM ql3.worker_sessions s CROSS JOIN (SELECT ` + dbNowMs + ` AS ms) n
WHERE s.session_id = $1::uuid`

// sqlCandidates reads one keyset page of ADR-0108 candidates: queued or
// dispatching Runs without a cancel intent whose latest Attempt is a
// claimed remote_worker Attempt with no live lease (none, released, or
// expired before the start barrier — a started Attempt is not claimed).
// The first page passes priority 1001 (above the CHECK's maximum).
const sqlCandidates = `SELECT r.run_id, r.version, r.priority, r.created_at_ms, a.attempt_id, a.attempt,
	a.version, r.execution_revision_id, r.execution_digest, r.timeout_ms
FROM ql3.runs r
JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
CROSS JOIN (SELECT ` + dbNowMs + ` AS ms) n
WHERE r.status IN ('queued', 'dispatching') AND r.cancel_requested_at_ms IS NULL
	AND r.not_before_ms <= n.ms
	AND a.status = 'claimed' AND a.executor = 'remote_worker'
	AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l
		WHERE l.run_id = r.run_id AND l.status = 'leased' AND l.expires_at_ms > n.ms)
	AND r.priority <= $1::int
	AND (r.priority < $1::int OR (r.created_at_ms, r.run_id) > ($2::bigint, $3::uuid))
ORDER BY r.priority DESC, r.created_at_ms, r.run_id
LIMIT $4::int`

// sqlClaim is the claim, one statement: the Run (skipped when another
// pull holds it), the Attempt bound to the session and offer, an expired
// unstarted lease of the Run released, the Run in dispatching, the new
// lease (unstarted: UnstartedLeaseMs of database time; generation + 1 of
// the attempt's), and the events (run.lease_released when a lease was
// released, then run.dispatched). No row: the candidate moved on. The
// lease insert reads "stale" first, so the released lease is out of the
// one-live-lease index before the new one goes in.
const sqlClaim = `WITH n AS (SELECT ` + dbNowMs + ` AS ms),
r AS (
	SELECT run_id, project_id, status FROM ql3.runs
	WHERE run_id = $1::uuid AND version = $2::bigint AND status IN ('queued', 'dispatching')
		AND cancel_requested_at_ms IS NULL
	FOR UPDATE SKIP LOCKED),
a AS (
	UPDATE ql3.attempts a SET worker_id = $4::uuid, session_id = $5::uuid, session_generation = $6::bigint,
		offer_id = $7::text, version = a.version + 1, updated_at_ms = n.ms
	FROM r, n
	WHERE a.attempt_id = $3::uuid AND a.run_id = r.run_id AND a.status = 'claimed' AND a.version = $8::bigint
	RETURNING a.attempt_id, a.run_id),
stale AS (
	UPDATE ql3.run_leases l SET status = 'released', release_reason = 'lease_expired', ended_at_ms = n.ms,
		updated_at_ms = n.ms, version = l.version + 1
	FROM a, n
	WHERE l.run_id = a.run_id AND l.status = 'leased' AND l.expires_at_ms <= n.ms
	RETURNING l.lease_generation),
released AS MATERIALIZED (SELECT count(*) AS c, max(lease_generation) AS gen FROM stale),
g AS (SELECT coalesce(max(lease_generation), 0) + 1 AS gen FROM ql3.run_leases WHERE attempt_id = $3::uuid),
ru AS (
	UPDATE ql3.runs x SET status = 'dispatching', version = x.version + 1, updated_at_ms = n.ms
	FROM r, a, n
	WHERE x.run_id = r.run_id
	RETURNING r.status AS from_status, r.project_id),
l AS (
	INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, version, status, leased_at_ms,
		expires_at_ms, updated_at_ms)
	SELECT $9::uuid, $1::uuid, $3::uuid, $10::int, ru.project_id, $4::uuid, $5::uuid, $6::bigint, $7::text,
		$11::bytea, g.gen, 1, 'leased', n.ms, n.ms + $12::bigint, n.ms
	FROM ru, g, n, released
	RETURNING lease_generation, expires_at_ms, project_id),
seq AS (SELECT coalesce(max(sequence), 0) AS s FROM ql3.run_events WHERE run_id = $1::uuid),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, seq.s + e.k, l.project_id, $10::int, e.type, e.payload, n.ms
	FROM l, seq, n, ru, released, LATERAL (
		SELECT 1 AS k, 'run.lease_released' AS type,
			$13::jsonb || jsonb_build_object('leaseGeneration', released.gen) AS payload
		WHERE released.c > 0
		UNION ALL
		SELECT 1 + (released.c > 0)::int, 'run.dispatched',
			$14::jsonb || jsonb_build_object('leaseGeneration', l.lease_generation)
				|| CASE WHEN ru.from_status <> 'dispatching' THEN jsonb_build_object('from', ru.from_status)
					ELSE '{}'::jsonb END) e
	RETURNING 1)
SELECT ru.from_status, l.lease_generation, l.expires_at_ms, (SELECT count(*) FROM ev) FROM ru, l`

// sqlTokenReused: the session already bound this token to another offer id.
const sqlTokenReused = `SELECT EXISTS (SELECT 1 FROM ql3.run_leases
	WHERE session_id = $1::uuid AND offer_id <> $2::text AND token_digest = $3::bytea)`

type pullSession struct {
	workerID     uuid.UUID
	generation   int64
	status       string
	capacity     int64
	capsJSON     string
	capsDigest   []byte
	leaseExpires int64
	nowMs        int64
	liveLeases   int64
	exists       bool
	replay       *replayFacts
	firstCands   []candidate
	tokenReused  bool
}

type candidate struct {
	runID          uuid.UUID
	runVersion     int64
	priority       int32
	createdAtMs    int64
	attemptID      uuid.UUID
	attemptNumber  int32
	attemptVersion int64
	revisionID     uuid.UUID
	revisionDigest []byte
	timeoutMs      int64
	score          int
}

// Pull implements ingress.LeasePort: at most one offer for the principal's
// session, or the identical offer again for an exact replay.
//
// An idle pull is one round trip without a transaction or a lock: the
// session, the replay lookup, the token check and the first candidate page
// go as one pipeline (one implicit read-only transaction). Only when a
// page holds an eligible candidate does the claim transaction start, which
// takes the session's exclusive lock and re-reads the session and its live
// leases before deciding capacity (ADR 0009).
func (d *Dispatcher) Pull(ctx context.Context, p ingress.Principal, req protocol.OfferPullRequest) (*protocol.Offer, time.Duration, error) {
	if err := req.Validate(); err != nil {
		return nil, 0, err
	}
	workerID, err := parseID("workerId", p.WorkerID)
	if err != nil {
		return nil, 0, err
	}
	sessionID, err := parseID("sessionId", req.SessionID)
	if err != nil {
		return nil, 0, err
	}
	d.stats.pulls.Add(1)
	digest := req.LeaseToken.Digest()
	offer, err := d.pull(ctx, workerID, sessionID, req, digest)
	if err != nil {
		return nil, 0, err
	}
	if offer == nil {
		d.stats.empty.Add(1)
		return nil, d.opts.IdleRetryAfter, nil
	}
	return offer, 0, nil
}

func (d *Dispatcher) pull(ctx context.Context, workerID, sessionID uuid.UUID, req protocol.OfferPullRequest,
	digest [sha256.Size]byte) (*protocol.Offer, error) {
	s, err := d.readPullSession(ctx, sessionID, req.OfferID, digest)
	if err != nil {
		return nil, err
	}
	if err := s.check(workerID, req.Generation); err != nil {
		return nil, err
	}
	if s.replay != nil {
		return d.rebuildOffer(ctx, d.db, s.replay, workerID, sessionID, req, digest)
	}
	if s.tokenReused {
		// A token is one offer's capability: never bind it twice.
		return nil, errs.E(errs.Conflict, "leaseToken", "this lease token is bound to another offer")
	}
	if !s.hasFreeSlot() {
		return nil, nil // draining, or no free slot: nothing for now
	}
	var capsDigest canonjson.Digest
	copy(capsDigest[:], s.capsDigest)
	prepared, err := d.preparedCaps(capsDigest, []byte(s.capsJSON))
	if err != nil {
		return nil, err
	}
	w := &pageWalk{d: d, prepared: prepared}
	if err := w.first(ctx, d.db, s.firstCands); err != nil {
		return nil, err
	}
	for len(w.eligible) == 0 {
		if !w.more() {
			return nil, nil
		}
		if err := w.next(ctx, d.db); err != nil {
			return nil, err
		}
	}
	return d.claimLocked(ctx, prepared, workerID, sessionID, req, digest)
}

// claimLocked is the claim transaction: BEGIN, the plan settings, the
// session's exclusive lock and the session re-read (free capacity is
// decided under the lock, ADR 0010) in one round trip, then one claim
// statement per try (a candidate that moved on costs one round trip and
// writes nothing; further pages are read in the same transaction), COMMIT.
func (d *Dispatcher) claimLocked(ctx context.Context, prepared *matcher.Prepared, workerID, sessionID uuid.UUID,
	req protocol.OfferPullRequest, digest [sha256.Size]byte) (*protocol.Offer, error) {
	var offer *protocol.Offer
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		offer = nil
		b := &pgx.Batch{}
		b.Queue(sqlLockExclusive, LockClassSession, LockObjectKey(sessionID))
		b.Queue(sqlPullSession, sessionID)
		b.Queue(sqlReplayLease, sessionID, req.OfferID)
		b.Queue(sqlTokenReused, sessionID, req.OfferID, digest[:])
		// The first page again, fresh: the unlocked one is only the
		// idle check, and under contention its head is already taken.
		b.Queue(sqlCandidates, int32(1001), int64(0), uuid.UUID{}, int32(d.opts.PullPageRows+1))
		br, err := tx.begin(ctx, b)
		if err != nil {
			return errorf(err, "postgres: begin claim")
		}
		locked := &pullSession{}
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return errorf(err, "postgres: session lock")
		}
		if err := locked.scanSession(br.QueryRow()); err != nil {
			_ = br.Close()
			return err
		}
		// The same request may have claimed meanwhile (a retry racing
		// the original): under the lock it is a replay, never a second
		// lease.
		if locked.replay, err = scanReplay(br.QueryRow()); err != nil {
			_ = br.Close()
			return err
		}
		if err := br.QueryRow().Scan(&locked.tokenReused); err != nil {
			_ = br.Close()
			return errorf(err, "postgres: token check")
		}
		rows, err := br.Query()
		if err != nil {
			_ = br.Close()
			return errorf(err, "postgres: read candidates")
		}
		fresh, err := collectCandidates(rows)
		if err != nil {
			_ = br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return errorf(err, "postgres: claim batch")
		}
		if err := locked.check(workerID, req.Generation); err != nil {
			return err
		}
		if locked.replay != nil {
			offer, err = d.rebuildOffer(ctx, tx, locked.replay, workerID, sessionID, req, digest)
			return err
		}
		if locked.tokenReused {
			return errs.E(errs.Conflict, "leaseToken", "this lease token is bound to another offer")
		}
		if !locked.hasFreeSlot() {
			return nil
		}
		w := &pageWalk{d: d, prepared: prepared}
		if err := w.first(ctx, tx, fresh); err != nil {
			return err
		}
		offer, err = w.claim(ctx, tx, workerID, sessionID, req, digest)
		return err
	})
	return offer, err
}

func (s *pullSession) hasFreeSlot() bool { return s.status == "online" && s.liveLeases < s.capacity }

func (s *pullSession) scanSession(row pgx.Row) error {
	err := row.Scan(&s.workerID, &s.generation, &s.status, &s.capacity, &s.capsJSON, &s.capsDigest,
		&s.leaseExpires, &s.nowMs, &s.liveLeases)
	switch {
	case err == pgx.ErrNoRows:
		s.exists = false
		return nil
	case err != nil:
		return errorf(err, "postgres: read session")
	}
	s.exists = true
	return nil
}

// readPullSession is the first round trip of a pull, outside any
// transaction: session, replay lookup, first page, token check.
func (d *Dispatcher) readPullSession(ctx context.Context, sessionID uuid.UUID, offerID string,
	digest [sha256.Size]byte) (*pullSession, error) {
	b := &pgx.Batch{}
	// The plan settings of the dispatcher's transactions (dtx.begin) for
	// this pipeline's implicit transaction too: without them the candidate
	// page got a custom plan on every idle pull (measured with
	// pg_stat_statements: 0.9 ms planning per call against 0.5 ms
	// executing it, a third of the server's CPU per remote run).
	b.Queue(planSettingsSQL)
	b.Queue(sqlPullSession, sessionID)
	b.Queue(sqlReplayLease, sessionID, offerID)
	b.Queue(sqlCandidates, int32(1001), int64(0), uuid.UUID{}, int32(d.opts.PullPageRows+1))
	b.Queue(sqlTokenReused, sessionID, offerID, digest[:])
	br := d.db.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil {
		return nil, errorf(err, "postgres: pull plan settings")
	}
	s := &pullSession{}
	if err := s.scanSession(br.QueryRow()); err != nil {
		return nil, err
	}
	rf, err := scanReplay(br.QueryRow())
	if err != nil {
		return nil, err
	}
	s.replay = rf
	rows, err := br.Query()
	if err != nil {
		return nil, errorf(err, "postgres: read candidates")
	}
	s.firstCands, err = collectCandidates(rows)
	if err != nil {
		return nil, err
	}
	if err := br.QueryRow().Scan(&s.tokenReused); err != nil {
		return nil, errorf(err, "postgres: token check")
	}
	if err := br.Close(); err != nil {
		return nil, errorf(err, "postgres: pull batch")
	}
	return s, nil
}

// check refuses a pull whose session is not the principal's live session
// (ADR 0010: identity comes from the transport; an expired, replaced or
// offline session fails closed).
func (s *pullSession) check(workerID uuid.UUID, generation int64) error {
	switch {
	case !s.exists || s.workerID != workerID:
		// Another worker's session is indistinguishable from none.
		return errs.E(errs.Conflict, "sessionId", "no such session for this worker")
	case s.generation != generation:
		return errs.E(errs.Conflict, "generation", "session generation does not match")
	case s.status == "offline":
		return errs.E(errs.Conflict, "sessionId", "session is offline")
	case s.leaseExpires <= s.nowMs:
		return errs.E(errs.Conflict, "sessionId", "session lease expired")
	}
	return nil
}

// claim makes the lease for one candidate, or returns nil when the
// candidate moved on (another pull took it, it was cancelled).
func (d *Dispatcher) claim(ctx context.Context, tx *dtx, c candidate, workerID, sessionID uuid.UUID,
	req protocol.OfferPullRequest, digest [sha256.Size]byte) (*protocol.Offer, error) {
	rev, err := d.revision(ctx, tx, c.revisionID)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(rev.digest[:], c.revisionDigest) {
		return nil, errs.E(errs.Internal, "", "run %s pins a digest its revision does not have", c.runID)
	}
	leaseID, err := uuid.NewV7()
	if err != nil {
		return nil, errs.E(errs.Internal, "", "lease id: %v", err)
	}
	released, dispatched, err := claimPayloads(c, rev, workerID, sessionID, req)
	if err != nil {
		return nil, err
	}
	var fromStatus string
	var leaseGen, expires, events int64
	err = tx.QueryRow(ctx, sqlClaim, c.runID, c.runVersion, c.attemptID, workerID, sessionID, req.Generation,
		req.OfferID, c.attemptVersion, leaseID, c.attemptNumber, digest[:], int64(UnstartedLeaseMs),
		released, dispatched).Scan(&fromStatus, &leaseGen, &expires, &events)
	if err == pgx.ErrNoRows {
		return nil, nil // the candidate moved on
	}
	if err != nil {
		return nil, errorf(err, "postgres: claim")
	}
	if events < 1 {
		return nil, errs.E(errs.Internal, "", "claim wrote no event")
	}
	d.stats.offers.Add(1)
	return buildOffer(rev, offerFacts{runID: c.runID, attemptID: c.attemptID, attemptNumber: int(c.attemptNumber),
		workerID: workerID, sessionID: sessionID, generation: req.Generation, offerID: req.OfferID,
		leaseGeneration: leaseGen, leaseVersion: 1, expiresAtMs: expires, tokenDigest: digest,
		timeoutMs: c.timeoutMs}), nil
}

// claimPayloads are the allow-listed event payloads of a claim, without
// what only the statement knows (lease generations, the Run's status).
func claimPayloads(c candidate, rev *compiledRevision, workerID, sessionID uuid.UUID, req protocol.OfferPullRequest) (string, string, error) {
	released, err := run.Payload{AttemptID: c.attemptID.String(), AttemptNumber: int(c.attemptNumber),
		Reason: "lease_expired"}.Encode()
	if err != nil {
		return "", "", errs.E(errs.Internal, "", "lease_released payload: %v", err)
	}
	dispatched, err := run.Payload{AttemptID: c.attemptID.String(), AttemptNumber: int(c.attemptNumber),
		To: string(run.RunDispatching), WorkerID: workerID.String(), SessionID: sessionID.String(),
		SessionGeneration: req.Generation, OfferID: req.OfferID,
		ExecutionRevisionID: rev.id.String(), ExecutionRevisionDigest: rev.digest.String()}.Encode()
	if err != nil {
		return "", "", errs.E(errs.Internal, "", "dispatched payload: %v", err)
	}
	return string(released), string(dispatched), nil
}

// offerFacts are the durable lease values an offer carries.
type offerFacts struct {
	runID, attemptID    uuid.UUID
	attemptNumber       int
	workerID, sessionID uuid.UUID
	generation          int64
	offerID             string
	leaseGeneration     int64
	leaseVersion        int64
	expiresAtMs         int64
	tokenDigest         [sha256.Size]byte
	timeoutMs           int64 // 0: the spec's
}

func buildOffer(rev *compiledRevision, f offerFacts) *protocol.Offer {
	timeout := rev.spec.TimeoutMs
	if f.timeoutMs > 0 {
		timeout = min(timeout, f.timeoutMs)
	}
	return &protocol.Offer{V: protocol.Version, RunID: f.runID.String(), AttemptID: f.attemptID.String(),
		AttemptNumber: f.attemptNumber, WorkerID: f.workerID.String(), SessionID: f.sessionID.String(),
		Generation: f.generation, OfferID: f.offerID, LeaseGeneration: f.leaseGeneration,
		LeaseVersion: f.leaseVersion, LeaseExpiresAtMs: f.expiresAtMs, LeaseTokenDigest: f.tokenDigest,
		ExecutionRevisionID: rev.id.String(), ExecutionRevisionDigest: rev.digest,
		SpecDigest: rev.specDigest, Spec: rev.spec, TimeoutMs: timeout}
}
