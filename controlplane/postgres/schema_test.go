package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
)

// TestSchemaConstraints: the CHECKs, uniques and foreign keys encode the
// state names and invariants, so a bug in an adapter cannot store a state
// the domain does not know. Each statement runs against the seeded fixture
// in its own rolled-back transaction, as the owner.
func TestSchemaConstraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	fx := newFixture()
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, "BEGIN;"+fx.sql(seedSQL)+"COMMIT;"); err != nil {
		t.Fatalf("seed: %v", err)
	}
	const (
		check  = postgres.SQLStateCheckViolation
		unique = postgres.SQLStateUniqueViolation
		fkey   = postgres.SQLStateForeignKeyViolation
		ok     = ""
	)
	cases := []struct {
		name, sql, state string
	}{
		{"run status outside the design's states", `UPDATE ql3.runs SET status = 'paused' WHERE run_id = {R1}`, check},
		{"every run state is accepted", `UPDATE ql3.runs SET status = s FROM unnest(ARRAY['created','queued','dispatching','running','retry_wait','lost']) s WHERE run_id = {R1}`, ok},
		{"terminal run needs finished_at_ms", `UPDATE ql3.runs SET status = 'succeeded' WHERE run_id = {R1}`, check},
		{"terminal run with finished_at_ms", `UPDATE ql3.runs SET status = 'timed_out', finished_at_ms = 5 WHERE run_id = {R1}`, ok},
		{"attempt status outside the design's states", `UPDATE ql3.attempts SET status = 'queued' WHERE attempt_id = {A1}`, check},
		{"attempt executor must be remote_worker", `UPDATE ql3.attempts SET executor = 'local' WHERE attempt_id = {A1}`, check},
		{"duplicate attempt number", `INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
			VALUES ({N}, {R1}, 1, {P}, 'claimed', 'remote_worker', 1, 1)`, unique},
		{"duplicate idempotency key in a project", `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
			origin, trigger_id, trigger_revision, idempotency_key, scheduled_for_ms, status, retry_max_attempts, retry_backoff_base_ms,
			retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, updated_at_ms)
			VALUES ({N}, {P}, {T}, 1, {E}, {D}, 'cron', {G}, 1, 'k1', 60000, 'queued', 3, 0, 0, true, 60000, 0, 1, 1)`, unique},
		{"run pinning a digest its revision does not have", `UPDATE ql3.runs SET execution_digest = '\x0000000000000000000000000000000000000000000000000000000000000000' WHERE run_id = {R1}`, fkey},
		{"retry max attempts above 16", `UPDATE ql3.runs SET retry_max_attempts = 17 WHERE run_id = {R1}`, check},
		{"backoff max below base", `UPDATE ql3.runs SET retry_backoff_base_ms = 10, retry_backoff_max_ms = 5 WHERE run_id = {R1}`, check},
		{"duplicate event sequence", `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, created_at_ms) VALUES ({R1}, 1, {P}, 'run.queued', 1)`, unique},
		{"event payload over 16 KiB", `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, payload, created_at_ms)
			VALUES ({R1}, 2, {P}, 'run.queued', jsonb_build_object('x', repeat('a', 16400)), 1)`, check},
		{"event payload must be an object", `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, payload, created_at_ms) VALUES ({R1}, 2, {P}, 'run.queued', '[]', 1)`, check},
		{"digest of 31 bytes", `UPDATE ql3.execution_revisions SET digest = '\x00000000000000000000000000000000000000000000000000000000000000' WHERE execution_revision_id = {E}`, check},
		{"claim owner without token", `UPDATE ql3.trigger_schedules SET claim_owner = 'r1', claim_version = 1 WHERE trigger_id = {G}`, check},
		{"full claim", `UPDATE ql3.trigger_schedules SET claim_owner = 'r1', claim_token = gen_random_uuid(), claim_version = 1, claim_expires_at_ms = 30000 WHERE trigger_id = {G}`, ok},
		{"claim without a version", `UPDATE ql3.trigger_schedules SET claim_owner = 'r1', claim_token = gen_random_uuid(), claim_version = 0, claim_expires_at_ms = 30000 WHERE trigger_id = {G}`, check},
		{"cursor at or before the last admitted occurrence", `UPDATE ql3.trigger_schedules SET last_scheduled_at_ms = 60000, next_fire_at_ms = 60000 WHERE trigger_id = {G}`, check},
		{"second schedule row for a trigger", `INSERT INTO ql3.trigger_schedules (trigger_id, project_id, trigger_revision, updated_at_ms) VALUES ({G}, {P}, 1, 1)`, unique},
		{"schedule pointing at a missing trigger revision", `UPDATE ql3.trigger_schedules SET trigger_revision = 9 WHERE trigger_id = {G}`, fkey},
		{"misfire policy outside skip|fire_once", `UPDATE ql3.trigger_revisions SET misfire_policy = 'replay' WHERE trigger_id = {G}`, check},
		{"misfire grace above 5 min", `UPDATE ql3.trigger_revisions SET misfire_grace_ms = 300001 WHERE trigger_id = {G}`, check},
		{"trigger revision pinning a digest the execution revision does not have", `UPDATE ql3.trigger_revisions SET execution_digest = '\x0101010101010101010101010101010101010101010101010101010101010101' WHERE trigger_id = {G}`, fkey},
		{"project status outside active|archived", `UPDATE ql3.projects SET status = 'deleted' WHERE project_id = {P}`, check},
		{"archived project needs archived_at_ms", `UPDATE ql3.projects SET status = 'archived' WHERE project_id = {P}`, check},
		{"second live session of a worker", `INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities, capabilities_digest,
			heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms) VALUES ({N}, {W1}, 2, 'online', 1, '{}', {D}, 1, 45001, 1, 1)`, unique},
		{"session status outside online|draining|offline", `UPDATE ql3.worker_sessions SET status = 'expired' WHERE session_id = {S1}`, check},
		{"capabilities over 16 KiB", `UPDATE ql3.worker_sessions SET capabilities = jsonb_build_object('x', repeat('a', 16400)) WHERE session_id = {S1}`, check},
		{"second live lease of a run", `INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id, session_generation,
			offer_id, token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
			VALUES ({N}, {R1}, {A1}, 1, {P}, {W1}, {S1}, 1, 'offer-9', {D}, 2, 'leased', 1, 30001, 1)`, unique},
		{"lease of a session that belongs to another worker", `UPDATE ql3.run_leases SET worker_id = {W2} WHERE lease_id = {L1}`, fkey},
		{"lease status outside leased|released|completed", `UPDATE ql3.run_leases SET status = 'lost', ended_at_ms = 2 WHERE lease_id = {L1}`, check},
		{"released lease needs a reason", `UPDATE ql3.run_leases SET status = 'released', ended_at_ms = 2 WHERE lease_id = {L1}`, check},
		{"expired lease release", `UPDATE ql3.run_leases SET status = 'released', release_reason = 'lease_expired', ended_at_ms = 2 WHERE lease_id = {L1}`, ok},
		{"credential without a digest", `UPDATE ql3.worker_credentials SET secret_digest = '\x' WHERE credential_id = {C1}`, check},
		{"log chunk for a missing attempt", `INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms)
			VALUES ({R1}, 7, 'stdout', 0, {P}, '\x00', 1)`, fkey},
		// 0006: dispatch and lifecycle state.
		{"cancel reason without a cancel time", `UPDATE ql3.runs SET cancel_reason = 'user' WHERE run_id = {R1}`, check},
		{"cancel time without a reason", `UPDATE ql3.runs SET cancel_requested_at_ms = 5 WHERE run_id = {R1}`, check},
		{"cancel reason outside the known ones", `UPDATE ql3.runs SET cancel_reason = 'whim', cancel_requested_at_ms = 5 WHERE run_id = {R1}`, check},
		{"timeout cancel intent", `UPDATE ql3.runs SET cancel_reason = 'timeout', cancel_requested_at_ms = 5 WHERE run_id = {R1}`, ok},
		{"deadline on an unstarted attempt", `UPDATE ql3.attempts SET deadline_at_ms = 5 WHERE attempt_id = {A1}`, check},
		{"deadline on a starting attempt", `UPDATE ql3.attempts SET status = 'starting', deadline_at_ms = 5 WHERE attempt_id = {A1}`, ok},
		{"signal that is not a signal name", `UPDATE ql3.attempts SET signal = 'kill' WHERE attempt_id = {A1}`, check},
		{"completion digest on an unfinished attempt", `UPDATE ql3.attempts SET completion_digest = {D} WHERE attempt_id = {A1}`, check},
		{"log stream storing more than it received", `UPDATE ql3.run_log_streams SET stored_bytes = 3 WHERE run_id = {R1} AND stream = 'stdout'`, check},
		{"log stream dropping bytes without truncation", `UPDATE ql3.run_log_streams SET length_bytes = 9 WHERE run_id = {R1} AND stream = 'stdout'`, check},
		{"log stream truncated", `UPDATE ql3.run_log_streams SET length_bytes = 9, truncated = true WHERE run_id = {R1} AND stream = 'stdout'`, ok},
		{"log stream for a missing attempt", `INSERT INTO ql3.run_log_streams (run_id, attempt, stream, project_id, created_at_ms, updated_at_ms)
			VALUES ({R1}, 7, 'stdout', {P}, 1, 1)`, fkey},
		{"credential superseded without a deadline", `UPDATE ql3.worker_credentials SET superseded_by = {C1}, superseded_at_ms = 1 WHERE credential_id = {C1}`, check},
		{"revoke reason on an active credential", `UPDATE ql3.worker_credentials SET revoke_reason = 'admin' WHERE credential_id = {C1}`, check},
		{"observed credential time without a credential", `UPDATE ql3.worker_sessions SET credential_id = NULL, credential_observed_at_ms = 1 WHERE session_id = {S1}`, check},
		{"task head revision that does not exist (checked at commit)", `UPDATE ql3.tasks SET head_revision = 9 WHERE task_id = {T}`, fkey},
	}
	for _, tc := range cases {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, fx.sql(tc.sql))
		if err == nil && strings.Contains(tc.name, "checked at commit") {
			err = tx.Commit(ctx)
		}
		_ = tx.Rollback(ctx)
		if got := postgres.SQLState(err); got != tc.state {
			t.Errorf("%s: SQLSTATE %q (%v), want %q", tc.name, got, err, tc.state)
		}
	}
}

// TestClaimAndDiscoveryIndexesFit: the coordinator's claim order (written
// with coalesce, active rows only, as the claim writes it) is served by
// trigger_schedules_due_idx, candidate discovery by run_queue_claim_idx
// (migration 0022) and the lease sweep by run_leases_expiry_idx, each without a sort
// (sequential scans disabled so the planner shows whether an index fits).
// The sweeper's timeout scan and the pull's token check are checked the same
// way beside their statements (sweep, dispatch).
func TestClaimAndDiscoveryIndexesFit(t *testing.T) {
	t.Parallel()
	conn := pgtest.NewDB(t).Conn(t)
	for _, tc := range []struct{ query, index string }{
		{`SELECT trigger_id FROM ql3.trigger_schedules WHERE active
			ORDER BY coalesce(next_fire_at_ms, -9223372036854775808), project_id, trigger_id LIMIT 16`, "trigger_schedules_due_idx"},
		{`SELECT run_id FROM ql3.run_queue ORDER BY priority DESC, created_at_ms, run_id LIMIT 9`, "run_queue_claim_idx"},
		{`SELECT lease_id FROM ql3.run_leases WHERE status = 'leased' AND expires_at_ms <= 1000 ORDER BY expires_at_ms, lease_id LIMIT 64`, "run_leases_expiry_idx"},
		// Retention reaches a Run's leases through its Attempts (migration 0011).
		{`SELECT l.lease_id FROM ql3.run_leases l JOIN ql3.attempts a ON a.run_id = '01a22f67-f4e6-72d1-ab92-9729495a5fc1'::uuid
			WHERE l.attempt_id = a.attempt_id`, "run_leases_attempt_id_lease_generation_key"},
	} {
		pgfixture.CheckIndexFits(t, conn, tc.query, tc.index)
	}
}
