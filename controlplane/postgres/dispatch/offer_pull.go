package dispatch

import (
	"context"
	"crypto/sha256"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
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
//  3. when a page holds an eligible candidate, one more round trip and one
//     implicit transaction (ADR 0031): the plan settings, the session's
//     exclusive advisory lock (ADR 0010: free capacity is decided under
//     it, so it is never oversold) and the claim statement, whose window
//     is empty unless the session is still the principal's, online,
//     unexpired and below capacity and the offer id and token are unused.
//     It reads its own window of candidates and claims the first one of a
//     placed revision that no concurrent pull holds (FOR UPDATE SKIP
//     LOCKED: the race for the queue head is settled inside the
//     statement), writing the Attempt, an expired unstarted lease
//     released, the lease and the events;
//  4. only when that claimed nothing, the claim transaction: the lock, the
//     session, replay and token checks and the first page re-read under
//     it, then claim statements up to the claim tries, COMMIT.
//
// An idle pull (nothing runnable) is therefore one round trip that writes
// nothing and takes no lock.

// DispatchStats counts what pulls did, for metrics and tests. PagesRead
// and CandidatesRead count every page read (a pull whose first claim
// statement missed reads its first page again under the lock).
type DispatchStats struct {
	Pulls, Offers, Replays, Empty   int64
	PagesRead, CandidatesRead       int64
	Ineligible, ClaimMisses, Truncs int64
	// ClaimStatements counts claim statements (ADR 0031: one statement
	// picks among a window of candidates); ClaimMisses those that found
	// nothing to claim.
	ClaimStatements int64
	// Rereads counts pulls whose pipelined claim claimed nothing, so the
	// claim transaction re-read the session and the pages under the lock.
	Rereads int64
	// FencedAcks and FencedCompletions count acks and completions
	// written in one round trip (ADR 0031).
	FencedAcks, FencedCompletions int64
	// BatchPulls, BatchOffers and LeaseBatches count the batch envelopes
	// (ADR 0058): batched pulls, the offers they claimed in their one
	// pipelined transaction, and lease batches.
	BatchPulls, BatchOffers, LeaseBatches int64
	// Rides counts running acks written together with their attempt's
	// completion in one statement (ADR 0058).
	Rides int64
}

type dispatchCounters struct {
	pulls, offers, replays, empty      atomic.Int64
	pages, candidates                  atomic.Int64
	ineligible, claimMisses, truncated atomic.Int64
	claimStatements, rereads           atomic.Int64
	fencedAcks, fencedCompletions      atomic.Int64
	batchPulls, batchOffers            atomic.Int64
	leaseBatches, rides                atomic.Int64
}

// Stats returns the counters since the Dispatcher was made.
func (d *Dispatcher) Stats() DispatchStats {
	c := &d.stats
	return DispatchStats{Pulls: c.pulls.Load(), Offers: c.offers.Load(), Replays: c.replays.Load(),
		Empty: c.empty.Load(), PagesRead: c.pages.Load(), CandidatesRead: c.candidates.Load(),
		Ineligible: c.ineligible.Load(), ClaimMisses: c.claimMisses.Load(), Truncs: c.truncated.Load(),
		ClaimStatements: c.claimStatements.Load(), Rereads: c.rereads.Load(),
		FencedAcks: c.fencedAcks.Load(), FencedCompletions: c.fencedCompletions.Load(),
		BatchPulls: c.batchPulls.Load(), BatchOffers: c.batchOffers.Load(), LeaseBatches: c.leaseBatches.Load(),
		Rides: c.rides.Load()}
}

const sqlPullSession = `SELECT s.worker_id, s.generation, s.status, s.capacity, s.capabilities::text,
	s.capabilities_digest, s.lease_expires_at_ms, n.ms,
	(SELECT count(*) FROM ql3.run_leases l
		WHERE l.session_id = s.session_id AND l.status = 'leased' AND l.expires_at_ms > n.ms)
FROM ql3.worker_sessions s CROSS JOIN (SELECT ` + postgres.DBNowMs + ` AS ms) n
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
CROSS JOIN (SELECT ` + postgres.DBNowMs + ` AS ms) n
WHERE r.status IN ('queued', 'dispatching') AND r.cancel_requested_at_ms IS NULL
	AND r.not_before_ms <= n.ms
	AND a.status = 'claimed' AND a.executor = 'remote_worker'
	AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l
		WHERE l.run_id = r.run_id AND l.status = 'leased' AND l.expires_at_ms > n.ms)
	AND r.priority <= $1::int
	AND (r.priority < $1::int OR (r.created_at_ms, r.run_id) > ($2::bigint, $3::uuid))
ORDER BY r.priority DESC, r.created_at_ms, r.run_id
LIMIT $4::int`

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

// Pull implements controlplane.LeasePort: at most one offer for the principal's
// session, or the identical offer again for an exact replay.
//
// An idle pull is one round trip without a transaction or a lock: the
// session, the replay lookup, the token check and the first candidate page
// go as one pipeline (one implicit read-only transaction). Only when a
// page holds an eligible candidate does the claim transaction start, which
// takes the session's exclusive lock and re-reads the session and its live
// leases before deciding capacity (ADR 0009).
func (d *Dispatcher) Pull(ctx context.Context, p controlplane.Principal, req protocol.OfferPullRequest) (*protocol.Offer, time.Duration, error) {
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
	w, err := d.placedWalk(ctx, s)
	if err != nil || w == nil {
		return nil, err
	}
	// First one pipeline: the session's exclusive lock and the claim
	// statement with the session, capacity, replay and token checks as
	// its conditions (ADR 0031). Only when it claims nothing does the claim
	// transaction re-read everything under the lock and decide.
	w.tries++
	offer, err := d.claim(ctx, d.pipelinedSend(sessionID), sqlClaimChecked, w.placed, workerID, sessionID, req, digest)
	if offer != nil || err != nil || w.tries >= d.opts.PullClaims {
		return offer, err
	}
	d.stats.rereads.Add(1)
	return d.claimLocked(ctx, &pageWalk{d: d, prepared: w.prepared, worker: w.worker, tries: w.tries}, workerID, sessionID, req, digest)
}

// placedWalk places the session's first pages (read by readPullSession,
// further pages while none is eligible); nil when nothing is eligible.
func (d *Dispatcher) placedWalk(ctx context.Context, s *pullSession) (*pageWalk, error) {
	var capsDigest canonjson.Digest
	copy(capsDigest[:], s.capsDigest)
	prepared, err := d.preparedCaps(capsDigest, []byte(s.capsJSON))
	if err != nil {
		return nil, err
	}
	w := &pageWalk{d: d, prepared: prepared, worker: s.workerID.String()}
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
	return w, nil
}

// claimLocked is the claim transaction of a pull whose pipelined claim
// claimed nothing: BEGIN, the plan settings, the session's exclusive lock,
// the session, replay and token checks and the first page re-read under
// it (free capacity is decided under the lock, ADR 0010), in one round
// trip; then claim statements page by page (re-reading the first page
// after a miss) until one succeeds or the claim tries are spent; COMMIT.
func (d *Dispatcher) claimLocked(ctx context.Context, w *pageWalk, workerID, sessionID uuid.UUID,
	req protocol.OfferPullRequest, digest [sha256.Size]byte) (*protocol.Offer, error) {
	var offer *protocol.Offer
	tries0 := w.tries
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		offer, w.tries = nil, tries0
		b := &pgx.Batch{}
		b.Queue(postgres.SQLLockExclusive, postgres.LockClassSession, postgres.LockObjectKey(sessionID))
		b.Queue(sqlPullSession, sessionID)
		b.Queue(sqlReplayLease, sessionID, req.OfferID)
		b.Queue(sqlTokenReused, sessionID, req.OfferID, digest[:])
		b.Queue(sqlCandidates, int32(1001), int64(0), uuid.UUID{}, int32(d.opts.PullPageRows+1))
		br, err := tx.Begin(ctx, b)
		if err != nil {
			return postgres.Errorf(err, "postgres: begin claim")
		}
		locked := &pullSession{}
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return postgres.Errorf(err, "postgres: session lock")
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
			return postgres.Errorf(err, "postgres: token check")
		}
		rows, err := br.Query()
		if err != nil {
			_ = br.Close()
			return postgres.Errorf(err, "postgres: read candidates")
		}
		fresh, err := collectCandidates(rows)
		if err != nil {
			_ = br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return postgres.Errorf(err, "postgres: claim batch")
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
		return postgres.Errorf(err, "postgres: read session")
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
	b.Queue(postgres.PlanSettingsSQL)
	b.Queue(sqlPullSession, sessionID)
	b.Queue(sqlReplayLease, sessionID, offerID)
	b.Queue(sqlCandidates, int32(1001), int64(0), uuid.UUID{}, int32(d.opts.PullPageRows+1))
	b.Queue(sqlTokenReused, sessionID, offerID, digest[:])
	br := d.db.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil {
		return nil, postgres.Errorf(err, "postgres: pull plan settings")
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
		return nil, postgres.Errorf(err, "postgres: read candidates")
	}
	s.firstCands, err = collectCandidates(rows)
	if err != nil {
		return nil, err
	}
	if err := br.QueryRow().Scan(&s.tokenReused); err != nil {
		return nil, postgres.Errorf(err, "postgres: token check")
	}
	if err := br.Close(); err != nil {
		return nil, postgres.Errorf(err, "postgres: pull batch")
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
	scheduledForMs      int64
	env                 []protocol.EnvVar // the pinned env store variables (envstore.OfferEnv)
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
		TaskID: rev.taskID.String(), TaskRevision: rev.taskRevision, ScheduledForMs: f.scheduledForMs,
		ExecutionRevisionID: rev.id.String(), ExecutionRevisionDigest: rev.digest,
		SpecDigest: rev.specDigest, Spec: rev.spec, TimeoutMs: timeout, Env: f.env, ScriptTree: rev.scriptTree,
		ProjectID: rev.projectID.String()}
}
