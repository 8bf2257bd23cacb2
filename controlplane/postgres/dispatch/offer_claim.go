package dispatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// The claim statement of an offer pull (ADR 0009 as amended by ADR 0031).
//
// Placement is decided per execution revision, in Go, from the candidate
// pages the pull read; the statement gets the revisions this session may
// run with their preferred scores and picks the Run itself:
//
//   - w, the window: the first pages × rows candidates as of the
//     statement's own snapshot (the same predicate and order as
//     sqlCandidates' first page), so the candidates are never older than
//     the statement — a page read a round trip earlier is already taken
//     when 32 sessions pull at once (measured: 3.2–3.5 claim statements per
//     run with one statement per candidate);
//   - r, the first window row in claim order (priority DESC, preferred
//     score DESC, FIFO, stable id) whose revision the session may run and
//     that is still the candidate the window saw, row-locked FOR UPDATE
//     SKIP LOCKED: a Run another pull is claiming right now is passed over,
//     never waited for, and one a pull claimed since the snapshot fails the
//     version re-check. Concurrent pulls thus settle their race inside one
//     statement each;
//   - then for that Run, as before: the Attempt bound to the session and
//     offer, an expired unstarted lease released, the Run in dispatching,
//     the new lease (unstarted: Lease.UnstartedMs of database time;
//     generation + 1 of the attempt's), and the events (run.lease_released
//     when a lease was released, then run.dispatched).
//
// A window row whose revision the pull has not placed (it appeared after
// the pages were read) is not claimed by this statement. No row: nothing
// in the window could be claimed. A row with a NULL lease: the chosen
// Run's Attempt moved on (nothing written). The lease insert reads "stale"
// first, so the released lease is out of the one-live-lease index before
// the new one goes in; it names the Run as a scalar (an index condition on
// run_leases_one_live_idx) — joined, the planner walked every live lease.
var sqlClaim = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
e AS (
	SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::int[], $4::text[])
		AS e(revision_id, digest, score, fragment)),
w AS (
	` + claimWindow + `),
r AS (
	` + claimPick + `),
a AS (
	UPDATE ql3.attempts a SET worker_id = $6::uuid, session_id = $7::uuid, session_generation = $8::bigint,
		offer_id = $9::text, version = a.version + 1, updated_at_ms = n.ms
	FROM r, n
	WHERE a.attempt_id = r.attempt_id AND a.run_id = r.run_id AND a.status = 'claimed'
		AND a.version = r.attempt_version
	RETURNING a.attempt_id, a.run_id),
stale AS (
	UPDATE ql3.run_leases l SET status = 'released', release_reason = 'lease_expired', ended_at_ms = n.ms,
		updated_at_ms = n.ms, version = l.version + 1
	FROM n
	WHERE l.run_id = (SELECT run_id FROM a) AND l.status = 'leased' AND l.expires_at_ms <= n.ms
	RETURNING l.lease_generation),
released AS MATERIALIZED (SELECT count(*) AS c, max(lease_generation) AS gen FROM stale),
g AS (SELECT coalesce(max(lease_generation), 0) + 1 AS gen FROM ql3.run_leases
	WHERE attempt_id = (SELECT attempt_id FROM a)),
ru AS (
	UPDATE ql3.runs x SET status = 'dispatching', version = x.version + 1, updated_at_ms = n.ms
	FROM r, a, n
	WHERE x.run_id = r.run_id
	RETURNING r.status AS from_status, r.project_id, r.run_id, r.attempt_id, r.attempt, r.fragment,
		r.priority, r.created_at_ms),
dq AS (
	DELETE FROM ql3.run_queue q USING ru
	WHERE q.priority = ru.priority AND q.created_at_ms = ru.created_at_ms AND q.run_id = ru.run_id),
pin AS (
	INSERT INTO ql3.attempt_envs (attempt_id, project_id, entries, created_at_ms)
	SELECT ru.attempt_id, ru.project_id, e.entries, n.ms
	FROM ru, n, LATERAL (SELECT ` + fmt.Sprintf(envstore.PinnedEntriesSQL, "ru.project_id") + ` AS entries) e
	WHERE e.entries IS NOT NULL
	ON CONFLICT (attempt_id) DO NOTHING
	RETURNING entries),
l AS (
	INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, version, status, leased_at_ms,
		expires_at_ms, updated_at_ms)
	SELECT $10::uuid, ru.run_id, ru.attempt_id, ru.attempt, ru.project_id, $6::uuid, $7::uuid, $8::bigint,
		$9::text, $11::bytea, g.gen, 1, 'leased', n.ms, n.ms + $12::bigint, n.ms
	FROM ru, g, n, released
	RETURNING lease_generation, expires_at_ms, project_id),
seq AS (SELECT coalesce(max(e.sequence), 0) AS s FROM ql3.run_events e, ru WHERE e.run_id = ru.run_id),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT ru.run_id, seq.s + k.k, l.project_id, ru.attempt, k.type, k.payload, n.ms
	FROM l, seq, n, ru, released,
		LATERAL (SELECT jsonb_build_object('attemptId', ru.attempt_id::text, 'attemptNumber', ru.attempt) AS p) ap,
		LATERAL (
			SELECT 1 AS k, 'run.lease_released' AS type,
				$13::jsonb || ap.p || jsonb_build_object('leaseGeneration', released.gen) AS payload
			WHERE released.c > 0
			UNION ALL
			SELECT 1 + (released.c > 0)::int, 'run.dispatched',
				$14::jsonb || ru.fragment::jsonb || ap.p || jsonb_build_object('leaseGeneration', l.lease_generation)
					|| CASE WHEN ru.from_status <> 'dispatching' THEN jsonb_build_object('from', ru.from_status)
						ELSE '{}'::jsonb END) k
	RETURNING 1)
SELECT r.run_id, r.attempt_id, r.attempt, r.execution_revision_id, r.timeout_ms, r.scheduled_for_ms,
	(SELECT lease_generation FROM l), (SELECT expires_at_ms FROM l), (SELECT count(*) FROM ev),
	coalesce((SELECT entries::text FROM pin), (SELECT p.entries::text FROM ql3.attempt_envs p WHERE p.attempt_id = r.attempt_id), '')
FROM r`

// sqlClaimChecked is sqlClaim for a pull's first claim, sent in one
// pipeline after the session's exclusive lock without an explicit
// transaction (claimPipelined): the checks the claim transaction makes in
// Go under the lock are conditions of the window instead — the session
// is the principal's ($6 worker, $7 session, $8 generation), online, its
// heartbeat lease unexpired by database time and its live leases below
// its capacity; no lease of the session has this offer id (a replay) or
// this token digest (a token bound twice). Any of them failing reads an
// empty window: no row, nothing written, and the pull takes the claim
// transaction, which answers the replay, the conflict or nothing.
var sqlClaimChecked = strings.Replace(strings.Replace(sqlClaim, "CROSS JOIN n /*checked*/", "CROSS JOIN n CROSS JOIN ok", 1),
	"\nw AS (", `
ok AS (
	SELECT 1 FROM ql3.worker_sessions s, n
	WHERE s.session_id = $7::uuid AND s.worker_id = $6::uuid AND s.generation = $8::bigint
		AND s.status = 'online' AND s.lease_expires_at_ms > n.ms
		AND s.capacity > (SELECT count(*) FROM ql3.run_leases l
			WHERE l.session_id = s.session_id AND l.status = 'leased' AND l.expires_at_ms > n.ms)
		AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.session_id = $7::uuid AND l.offer_id = $9::text)
		AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.session_id = $7::uuid AND l.token_digest = $11::bytea)),
w AS (`, 1)

// placedRevision is an execution revision the pull placed on this session:
// eligible, with its preferred score.
type placedRevision struct {
	rev   *compiledRevision
	score int
}

// claimSend runs one claim statement and hands its row to scan.
type claimSend func(ctx context.Context, sql string, args []any, scan func(pgx.Row) error) error

// inTxSend runs the claim statement inside the claim transaction.
func inTxSend(tx *dtx) claimSend {
	return func(ctx context.Context, sql string, args []any, scan func(pgx.Row) error) error {
		return scan(tx.QueryRow(ctx, sql, args...))
	}
}

// pipelinedSend runs sqlClaimChecked in one pipeline after the plan
// settings and the session's exclusive lock, as one implicit transaction
// (one Sync: the lock is held until the claim is committed; see
// TestPipelineWithoutBeginIsOneTransaction).
func (d *Dispatcher) pipelinedSend(sessionID uuid.UUID) claimSend {
	return func(ctx context.Context, sql string, args []any, scan func(pgx.Row) error) error {
		return d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
			b := &pgx.Batch{}
			b.Queue(postgres.PlanSettingsSQL)
			b.Queue(postgres.SQLLockExclusive, postgres.LockClassSession, postgres.LockObjectKey(sessionID))
			b.Queue(sql, args...)
			br := tx.SendBatch(ctx, b)
			for range 2 {
				if _, err := br.Exec(); err != nil {
					_ = br.Close()
					return err
				}
			}
			if err := scan(br.QueryRow()); err != nil {
				_ = br.Close()
				return err
			}
			return br.Close()
		})
	}
}

// claim runs one claim statement (sqlClaim in the claim transaction, or
// sqlClaimChecked pipelined) over the window for the revisions the pull
// placed. It returns the offer, or nil when nothing in the window could be
// claimed (or, checked, a check failed).
func (d *Dispatcher) claim(ctx context.Context, send claimSend, sql string, placed map[uuid.UUID]placedRevision,
	workerID, sessionID uuid.UUID, req protocol.OfferPullRequest, digest [sha256.Size]byte) (*protocol.Offer, error) {
	c, err := d.prepareClaim(placed, workerID, sessionID, req, digest, int32(d.opts.PullPages*d.opts.PullPageRows))
	if err != nil {
		return nil, err
	}
	d.stats.claimStatements.Add(1)
	if err = send(ctx, sql, c.args, c.scan); err != nil {
		return nil, postgres.Errorf(err, "postgres: claim")
	}
	return d.finishClaim(c, placed)
}

// claimCall is one claim statement's arguments and, once scanned, its row.
type claimCall struct {
	args          []any
	req           protocol.OfferPullRequest
	digest        [sha256.Size]byte
	f             offerFacts
	revisionID    uuid.UUID
	attemptNumber int32
	leaseGen      *int64
	expires       *int64
	events        int64
	pinned        string // the Attempt's pinned env (ciphertext JSON), read back by the claim
	missed        bool
}

// prepareClaim builds the arguments of one claim statement ($1–$14).
func (d *Dispatcher) prepareClaim(placed map[uuid.UUID]placedRevision, workerID, sessionID uuid.UUID,
	req protocol.OfferPullRequest, digest [sha256.Size]byte, window int32) (*claimCall, error) {
	n := len(placed)
	revIDs, digests := make([]uuid.UUID, 0, n), make([][]byte, 0, n)
	scores, fragments := make([]int32, 0, n), make([]string, 0, n)
	for id, p := range placed {
		frag, err := run.Payload{ExecutionRevisionID: p.rev.id.String(),
			ExecutionRevisionDigest: p.rev.digest.String()}.Encode()
		if err != nil {
			return nil, errs.E(errs.Internal, "", "dispatched payload: %v", err)
		}
		revIDs, digests = append(revIDs, id), append(digests, p.rev.digest[:])
		scores, fragments = append(scores, int32(p.score)), append(fragments, string(frag))
	}
	released, dispatched, err := claimPayloads(workerID, sessionID, req)
	if err != nil {
		return nil, err
	}
	leaseID, err := uuid.NewV7()
	if err != nil {
		return nil, errs.E(errs.Internal, "", "lease id: %v", err)
	}
	c := &claimCall{req: req, digest: digest}
	c.f.workerID, c.f.sessionID = workerID, sessionID
	c.args = []any{revIDs, digests, scores, fragments, window, workerID, sessionID, req.Generation, req.OfferID,
		leaseID, digest[:], d.opts.Lease.UnstartedMs, released, dispatched}
	return c, nil
}

// scan reads the claim statement's row (none: nothing claimed).
func (c *claimCall) scan(row pgx.Row) error {
	err := row.Scan(&c.f.runID, &c.f.attemptID, &c.attemptNumber, &c.revisionID, &c.f.timeoutMs, &c.f.scheduledForMs,
		&c.leaseGen, &c.expires, &c.events, &c.pinned)
	if err == pgx.ErrNoRows {
		c.missed = true
		return nil
	}
	return err
}

// finishClaim builds the offer of a scanned claim statement, or nil when
// it claimed nothing.
func (d *Dispatcher) finishClaim(c *claimCall, placed map[uuid.UUID]placedRevision) (*protocol.Offer, error) {
	if c.missed || c.leaseGen == nil || c.expires == nil {
		d.stats.claimMisses.Add(1)
		return nil, nil // nothing claimable in the window, or the chosen Attempt moved on
	}
	p, ok := placed[c.revisionID]
	if !ok || c.events < 1 {
		return nil, errs.E(errs.Internal, "", "claim chose revision %s, wrote %d events", c.revisionID, c.events)
	}
	f := c.f
	var err error
	if f.env, err = envstore.OfferEnv(c.pinned, d.opts.Env, p.rev.spec); err != nil {
		return nil, err
	}
	d.stats.offers.Add(1)
	f.attemptNumber, f.generation, f.offerID = int(c.attemptNumber), c.req.Generation, c.req.OfferID
	f.leaseGeneration, f.leaseVersion, f.expiresAtMs, f.tokenDigest = *c.leaseGen, 1, *c.expires, c.digest
	return buildOffer(p.rev, f), nil
}

// claimPayloads are the session's part of the allow-listed event payloads
// of a claim; the statement adds the Attempt, the revision (the placed
// revision's fragment), the lease generation and the Run's former status.
func claimPayloads(workerID, sessionID uuid.UUID, req protocol.OfferPullRequest) (string, string, error) {
	released, err := run.Payload{Reason: "lease_expired"}.Encode()
	if err != nil {
		return "", "", errs.E(errs.Internal, "", "lease_released payload: %v", err)
	}
	dispatched, err := run.Payload{To: string(run.RunDispatching), WorkerID: workerID.String(),
		SessionID: sessionID.String(), SessionGeneration: req.Generation, OfferID: req.OfferID}.Encode()
	if err != nil {
		return "", "", errs.E(errs.Internal, "", "dispatched payload: %v", err)
	}
	return string(released), string(dispatched), nil
}
