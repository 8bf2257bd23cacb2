package coordinator

import (
	"context"
	"testing"
	"time"
)

// TestTwoCoordinatorsSweepExpiredLeasesOnce: two running coordinators
// (their own pools, their own loops) sweep 1,000 Runs whose unstarted
// leases expired: every Run is back in the queue with its Attempt exactly
// once, and the two replicas' counters add up to 1,000.
func TestTwoCoordinatorsSweepExpiredLeasesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 1000
	e.exec(t, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms)
		VALUES ('01a22f1a-0000-7000-8000-00000000000a', 'w', 'active', 1, 1)`)
	e.exec(t, `INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT '01a22f1a-0000-7000-8000-00000000000b', '01a22f1a-0000-7000-8000-00000000000a', 1, 'online', 64, '{}',
			sha256('{}'), n, n + 600000, n, n FROM (SELECT `+nowMsSQL+` AS n) x`)
	e.exec(t, `WITH n AS (SELECT `+nowMsSQL+` AS ms),
	t AS (SELECT k.task_id, k.project_id, k.head_revision, e.execution_revision_id, e.digest
		FROM ql3.tasks k JOIN ql3.execution_revisions e ON e.task_id = k.task_id AND e.task_revision = k.head_revision
		WHERE k.task_id = $1::uuid),
	g AS (SELECT gen_random_uuid() AS run_id, gen_random_uuid() AS attempt_id FROM generate_series(1, $2::int)),
	r AS (INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, idempotency_key, scheduled_for_ms, status, attempt_count, retry_max_attempts, retry_backoff_base_ms,
		retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms)
		SELECT g.run_id, t.project_id, t.task_id, t.head_revision, t.execution_revision_id, t.digest, 'manual',
			g.run_id::text, n.ms, 'dispatching', 1, 1, 0, 0, false, 60000, n.ms, n.ms, n.ms, n.ms
		FROM g, t, n RETURNING run_id),
	a AS (INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, worker_id, session_id,
		session_generation, offer_id, created_at_ms, updated_at_ms)
		SELECT g.attempt_id, g.run_id, 1, t.project_id, 'claimed', 'remote_worker', '01a22f1a-0000-7000-8000-00000000000a',
			'01a22f1a-0000-7000-8000-00000000000b', 1, 'o-' || g.attempt_id::text, n.ms, n.ms
		FROM g JOIN r ON r.run_id = g.run_id, t, n RETURNING attempt_id)
	INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
	SELECT gen_random_uuid(), g.run_id, g.attempt_id, 1, t.project_id, '01a22f1a-0000-7000-8000-00000000000a',
		'01a22f1a-0000-7000-8000-00000000000b', 1, 'o-' || g.attempt_id::text, sha256(g.attempt_id::text::bytea), 1,
		'leased', n.ms - 60000, n.ms - 1000, n.ms - 60000
	FROM g JOIN a ON a.attempt_id = g.attempt_id, t, n`, e.taskID, n)

	c1, d1 := newCoord(t, e.pool(t, "coord-sweep-1"), Config{Owner: "replica-s1", Cadence: 20 * time.Millisecond})
	c2, d2 := newCoord(t, e.pool(t, "coord-sweep-2"), Config{Owner: "replica-s2", Cadence: 20 * time.Millisecond})
	for _, c := range []*Coordinator{c1, c2} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for e.count(t, `SELECT count(*) FROM ql3.run_leases WHERE status = 'leased'`) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("leases still live after 60 s (replica 1 %s; replica 2 %s)", metricsString(c1.Metrics()), metricsString(c2.Metrics()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []*Coordinator{c1, c2} {
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := c1.Metrics().SweepRequeued.Load() + c2.Metrics().SweepRequeued.Load(); got != n {
		t.Fatalf("replicas requeued %d + %d, want %d in all", c1.Metrics().SweepRequeued.Load(), c2.Metrics().SweepRequeued.Load(), n)
	}
	if c := e.count(t, `SELECT count(*) FROM (SELECT run_id FROM ql3.run_events WHERE type = 'run.queued'
		GROUP BY run_id HAVING count(*) = 1) x`); c != n {
		t.Fatalf("%d Runs have exactly one run.queued, want %d", c, n)
	}
	if c := e.count(t, `SELECT count(*) FROM ql3.runs WHERE status = 'queued' AND attempt_count = 1`); c != n {
		t.Fatalf("%d Runs queued with their first Attempt, want %d", c, n)
	}
	if k := d1.kinds()["sweep_failed"] + d2.kinds()["sweep_failed"]; k != 0 {
		t.Fatalf("%d failed sweeps", k)
	}
}

const nowMsSQL = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`
