package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
)

// lifeFixture extends schedFixture with a worker and a live session, and
// writes Runs, Attempts and RunLeases in any state the way admission and
// dispatch would have left them (until dispatch's own transactions exist,
// the fixture stands in for them). Setup goes through the superuser
// connection; the code under test uses the runtime pool.
type lifeFixture struct {
	schedFixture
	workerID, sessionID uuid.UUID
}

func newLifeFixture(t *testing.T) lifeFixture {
	t.Helper()
	f := lifeFixture{schedFixture: newSchedFixture(t), workerID: uuid.New(), sessionID: uuid.New()}
	f.exec(t, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms)
		VALUES ($1::uuid, 'w-' || $1::uuid::text, 'active', 1, 1)`, f.workerID)
	f.session(t, f.sessionID, f.workerID, 1, "online", 60_000)
	return f
}

// session inserts a session whose heartbeat lease ends leaseMs from now.
func (f lifeFixture) session(t *testing.T, id, worker uuid.UUID, generation int64, status string, leaseMs int64) {
	t.Helper()
	f.exec(t, `INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms, closed_at_ms)
		SELECT $1::uuid, $2::uuid, $3::bigint, $4::text, 8, '{}', sha256('{}'), n.ms - 100000,
			greatest(n.ms + $5::bigint, n.ms - 100000), n.ms - 100000, n.ms, CASE WHEN $4::text = 'offline' THEN n.ms END
		FROM (SELECT `+nowSQL+` AS ms) n`, id, worker, generation, status, leaseMs)
}

const nowSQL = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// lifeRun describes a Run to write.
type lifeRun struct {
	status       string // run status
	attempt      string // status of the current attempt
	attemptCount int    // default 1
	maxAttempts  int    // default 3
	retryOnLost  bool
	backoffMs    int64 // base; max is 8× base
	intent       string
	// lease: "" none, "live", "expired" (by 1 s), "stale" (expired by an hour),
	// "released", "completed"
	lease   string
	session uuid.UUID // default the fixture's session
	taskID  string    // default the fixture's task
	ageMs   int64     // created this long ago (default 1000)
}

// run writes r and returns the Run id and its current Attempt id.
func (f lifeFixture) run(t *testing.T, r lifeRun) (runID, attemptID uuid.UUID) {
	t.Helper()
	runID, attemptID = uuid.New(), uuid.New()
	if r.attemptCount == 0 {
		r.attemptCount = 1
	}
	if r.maxAttempts == 0 {
		r.maxAttempts = 3
	}
	if r.session == uuid.Nil {
		r.session = f.sessionID
	}
	if r.taskID == "" {
		r.taskID = f.taskID
	}
	if r.ageMs == 0 {
		r.ageMs = 1000
	}
	terminal := map[string]bool{"succeeded": true, "failed": true, "cancelled": true, "timed_out": true}
	var intent any
	if r.intent != "" {
		intent = r.intent
	}
	f.exec(t, `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, idempotency_key, scheduled_for_ms, status, attempt_count, retry_max_attempts, retry_backoff_base_ms,
		retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms,
		finished_at_ms, cancel_requested_at_ms, cancel_reason)
		SELECT $1::uuid, k.project_id, k.task_id, k.head_revision, e.execution_revision_id, e.digest, 'manual', $1::uuid::text,
			n.ms - $9::bigint, $3::text, $4::int, $5::int, $6::bigint, 8 * $6::bigint, $7::boolean, 60000, n.ms,
			n.ms - $9::bigint, n.ms - $9::bigint, n.ms - $9::bigint,
			CASE WHEN $8::boolean THEN n.ms END, CASE WHEN $10::text IS NOT NULL THEN n.ms - $9::bigint END, $10::text
		FROM ql3.tasks k JOIN ql3.execution_revisions e ON e.task_id = k.task_id AND e.task_revision = k.head_revision
		CROSS JOIN (SELECT `+nowSQL+` AS ms) n WHERE k.task_id = $2::uuid`,
		runID, r.taskID, r.status, r.attemptCount, r.maxAttempts, r.backoffMs, r.retryOnLost, terminal[r.status],
		r.ageMs, intent)
	for n := 1; n <= r.attemptCount; n++ {
		id, status := uuid.New(), "failed"
		if n == r.attemptCount {
			id, status = attemptID, r.attempt
		}
		final := status != "claimed" && status != "starting" && status != "running"
		offered := status != "claimed" || r.lease != ""
		f.exec(t, `INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, worker_id,
			session_id, session_generation, offer_id, started_at_ms, finished_at_ms, created_at_ms, updated_at_ms)
			SELECT $1::uuid, $2::uuid, $3::int, r.project_id, $4::text, 'remote_worker',
				CASE WHEN $6::boolean THEN s.worker_id END, CASE WHEN $6::boolean THEN s.session_id END,
				CASE WHEN $6::boolean THEN s.generation END, CASE WHEN $6::boolean THEN 'offer-' || $1::uuid::text END,
				CASE WHEN $4::text <> 'claimed' THEN n.ms - 500 END, CASE WHEN $5::boolean THEN n.ms - 400 END, n.ms - 900, n.ms - 400
			FROM ql3.runs r, ql3.worker_sessions s, (SELECT `+nowSQL+` AS ms) n
			WHERE r.run_id = $2::uuid AND s.session_id = $7::uuid`, id, runID, n, status, final, offered, r.session)
	}
	if r.lease == "" {
		return runID, attemptID
	}
	f.exec(t, `INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, status, release_reason, leased_at_ms,
		expires_at_ms, updated_at_ms, ended_at_ms)
		SELECT gen_random_uuid(), $1::uuid, $2::uuid, $3::int, r.project_id, s.worker_id, s.session_id, s.generation,
			'offer-' || $2::uuid::text, sha256($2::uuid::text::bytea), 1,
			CASE WHEN $4::text IN ('released', 'completed') THEN $4::text ELSE 'leased' END,
			CASE WHEN $4::text = 'released' THEN 'test' END, n.ms - 7200000,
			CASE $4::text WHEN 'live' THEN n.ms + 30000 WHEN 'expired' THEN n.ms - 1000 ELSE n.ms - 3600000 END,
			n.ms - 3600000, CASE WHEN $4::text IN ('released', 'completed') THEN n.ms - 3600000 END
		FROM ql3.runs r, ql3.worker_sessions s, (SELECT `+nowSQL+` AS ms) n
		WHERE r.run_id = $1::uuid AND s.session_id = $5::uuid`, runID, attemptID, r.attemptCount, r.lease, r.session)
	return runID, attemptID
}

// runState is what the tests compare before and after a sweep.
type runState struct {
	Status, Attempt, Lease, Reason string
	Version, AttemptCount, Events  int64
}

func (f lifeFixture) state(t *testing.T, runID uuid.UUID) runState {
	t.Helper()
	var s runState
	if err := f.su.QueryRow(context.Background(), `SELECT r.status, a.status,
		coalesce((SELECT l.status FROM ql3.run_leases l WHERE l.run_id = r.run_id ORDER BY l.leased_at_ms DESC, l.lease_generation DESC LIMIT 1), ''),
		coalesce((SELECT l.release_reason FROM ql3.run_leases l WHERE l.run_id = r.run_id ORDER BY l.leased_at_ms DESC, l.lease_generation DESC LIMIT 1), ''),
		r.version, r.attempt_count, (SELECT count(*) FROM ql3.run_events e WHERE e.run_id = r.run_id)
		FROM ql3.runs r JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
		WHERE r.run_id = $1`, runID).Scan(&s.Status, &s.Attempt, &s.Lease, &s.Reason, &s.Version, &s.AttemptCount, &s.Events); err != nil {
		t.Fatal(err)
	}
	return s
}

// events lists a Run's event types in order.
func (f lifeFixture) events(t *testing.T, runID uuid.UUID) []string {
	t.Helper()
	rows, err := f.su.Query(context.Background(), `SELECT type FROM ql3.run_events WHERE run_id = $1 ORDER BY sequence`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// sweep runs one pass on the runtime pool with a 10 s grace.
func (f lifeFixture) sweep(t *testing.T) controlplane.SweepReport {
	t.Helper()
	return sweepOn(t, f.runtime)
}

func sweepOn(t *testing.T, pool *pgxpool.Pool) controlplane.SweepReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := postgres.Sweep(ctx, pool, controlplane.SweepOptions{})
	if err != nil {
		t.Fatalf("sweep: %v (report %+v)", err, rep)
	}
	return rep
}

type uuidPair struct{ run, attempt uuid.UUID }
