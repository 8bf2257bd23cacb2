package dispatch

import (
	"strings"

	"github.com/ql3/ql3/controlplane/postgres"
)

// The claimable Runs (ADR-0108 candidates, ADR 0064) are read from
// ql3.run_queue (migration 0022): one row per queued Run, in claim order
// (priority DESC, FIFO, stable id), so no in-flight Run and no finished Run
// is ever read. A Run qualifies when it has no cancel intent, is due
// (not_before_ms), its latest Attempt is a claimed remote_worker Attempt
// and no live lease holds it. A dispatching Run whose unstarted lease
// expired is not in the queue: the lease sweep releases that lease and
// queues the Run again (action requeue), and the next claim takes it.
//
// windowFrom is the shared body; "CROSS JOIN n /*checked*/" is where
// sqlClaimChecked adds the session checks. The live-lease probe is kept a
// per-row subplan (OFFSET 0) on run_leases_one_live_idx: as an anti join
// the planner, estimating one live lease, read every live lease once per
// window row (measured: 142 × 48 rows compared per claim).
const candidateCols = `r.run_id, r.version, r.priority, r.created_at_ms, a.attempt_id, a.attempt,
	a.version AS attempt_version, r.execution_revision_id, r.execution_digest, r.timeout_ms`

const windowFrom = `FROM ql3.run_queue q
	JOIN ql3.runs r ON r.run_id = q.run_id
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	CROSS JOIN n /*checked*/
	WHERE r.status = 'queued' AND r.cancel_requested_at_ms IS NULL
		AND r.not_before_ms <= n.ms
		AND a.status = 'claimed' AND a.executor = 'remote_worker'
		AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l
			WHERE l.run_id = r.run_id AND l.status = 'leased' AND l.expires_at_ms > n.ms OFFSET 0)`

// windowQueued is the claim's window: the first $5 claimable Runs.
const windowQueued = `SELECT ` + candidateCols + `
	` + windowFrom + `
	ORDER BY q.priority DESC, q.created_at_ms, q.run_id
	LIMIT $5::int`

// sqlCandidates reads one keyset page of claimable Runs. The first page
// passes priority 1001 (above the CHECK's maximum).
var sqlCandidates = strings.Replace(`WITH n AS (SELECT `+postgres.DBNowMs+` AS ms)
SELECT `+candidateCols+`
	`+windowFrom+`
		AND q.priority <= $1::int
		AND (q.priority < $1::int OR (q.created_at_ms, q.run_id) > ($2::bigint, $3::uuid))
	ORDER BY q.priority DESC, q.created_at_ms, q.run_id
	LIMIT $4::int`, " /*checked*/", "", 1)
