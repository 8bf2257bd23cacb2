package dispatch

import "github.com/ql3/ql3/controlplane/postgres"

// The claimable Runs (ADR-0108 candidates, ADR 0064) are read from
// ql3.run_queue (migration 0022): one row per queued Run, in claim order
// (priority DESC, FIFO, stable id), so no in-flight Run and no finished Run
// is ever read. A Run qualifies when it has no cancel intent, is due
// (not_before_ms), its latest Attempt is a claimed remote_worker Attempt
// and no live lease holds it. A dispatching Run whose unstarted lease
// expired is not in the queue: the lease sweep releases that lease and
// queues the Run again (action requeue), and the next claim takes it.
//
// windowFrom is the candidate pages' body. The live-lease probe is kept a
// per-row subplan (OFFSET 0) on run_leases_one_live_idx: as an anti join
// the planner, estimating one live lease, read every live lease once per
// window row (measured: 142 × 48 rows compared per claim).
const candidateCols = `r.run_id, r.version, r.priority, r.created_at_ms, a.attempt_id, a.attempt,
	a.version AS attempt_version, r.execution_revision_id, r.execution_digest, r.timeout_ms`

const windowFrom = `FROM ql3.run_queue q
	JOIN ql3.runs r ON r.run_id = q.run_id
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	CROSS JOIN n
	WHERE r.status = 'queued' AND r.cancel_requested_at_ms IS NULL
		AND r.not_before_ms <= n.ms
		AND a.status = 'claimed' AND a.executor = 'remote_worker'
		AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l
			WHERE l.run_id = r.run_id AND l.status = 'leased' AND l.expires_at_ms > n.ms OFFSET 0)`

// claimWindow is the claim's window: the first $5 due rows of the queue,
// read from ql3.run_queue alone (the row carries the revision, digest and
// not_before_ms, migration 0022).
const claimWindow = `SELECT q.run_id, q.priority, q.created_at_ms, q.execution_revision_id, q.execution_digest
	FROM ql3.run_queue q
	CROSS JOIN n /*checked*/
	WHERE q.not_before_ms <= n.ms
	ORDER BY q.priority DESC, q.created_at_ms, q.run_id
	LIMIT $5::int`

// claimPick is the claim's choice: the window's rows whose revision the
// pull placed, in claim order (priority DESC, preferred score DESC, FIFO,
// id), each checked against its Run and Attempt (still queued without a
// cancel intent and due, a claimed remote_worker Attempt, no live lease)
// only as the scan reaches it, and the first one whose Run row can be
// locked without waiting (SKIP LOCKED; a Run claimed since the snapshot
// fails the re-check on its newest version). So a claim reads the Run and
// Attempt of about the one row it takes, not of the whole window.
const claimPick = `SELECT x.run_id, x.project_id, x.status, x.priority, x.created_at_ms, x.timeout_ms, x.scheduled_for_ms,
		x.execution_revision_id, a.attempt_id, a.attempt, a.version AS attempt_version, s.fragment
	FROM (SELECT w.run_id, w.priority, w.created_at_ms, e.score, e.fragment
		FROM w JOIN e ON e.revision_id = w.execution_revision_id AND e.digest = w.execution_digest
		ORDER BY w.priority DESC, e.score DESC, w.created_at_ms, w.run_id) s
	JOIN ql3.runs x ON x.run_id = s.run_id
	JOIN ql3.attempts a ON a.run_id = x.run_id AND a.attempt = x.attempt_count
	CROSS JOIN n
	WHERE x.status = 'queued' AND x.cancel_requested_at_ms IS NULL AND x.not_before_ms <= n.ms
		AND a.status = 'claimed' AND a.executor = 'remote_worker'
		AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l
			WHERE l.run_id = x.run_id AND l.status = 'leased' AND l.expires_at_ms > n.ms OFFSET 0)
	ORDER BY s.priority DESC, s.score DESC, s.created_at_ms, s.run_id
	LIMIT 1
	FOR UPDATE OF x SKIP LOCKED`

// sqlCandidates reads one keyset page of claimable Runs. The first page
// passes priority 1001 (above the CHECK's maximum).
const sqlCandidates = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms)
SELECT ` + candidateCols + `
	` + windowFrom + `
		AND q.priority <= $1::int
		AND (q.priority < $1::int OR (q.created_at_ms, q.run_id) > ($2::bigint, $3::uuid))
	ORDER BY q.priority DESC, q.created_at_ms, q.run_id
	LIMIT $4::int`
