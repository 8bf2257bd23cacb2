package sweep_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/sweep"
	"github.com/ql3/ql3/core/errs"
)

// TestSweeperReleasesExpiredUnstarted: an unstarted lease that expired puts
// the Run back to queued with the same Attempt, announces lease generation
// 2, and is never lost.
func TestSweeperReleasesExpiredUnstarted(t *testing.T) {
	f := newLifeFixture(t)
	runID, attemptID := f.Run(t, lifeRun{Status: "dispatching", Attempt: "claimed", Lease: "expired"})
	rep := f.Sweep(t)
	if rep.Requeued != 1 || rep.Lost != 0 {
		t.Fatalf("report %+v", rep)
	}
	got := f.State(t, runID)
	if got.Status != "queued" || got.Attempt != "claimed" || got.AttemptCount != 1 || got.Lease != "released" || got.Reason != "lease_expired" {
		t.Fatalf("state %+v", got)
	}
	var sameAttempt int64
	var gen int64
	if err := f.SU.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE a.attempt_id = $2),
		max((e.payload->>'leaseGeneration')::bigint) FILTER (WHERE e.type = 'run.queued')
		FROM ql3.attempts a JOIN ql3.run_events e ON e.run_id = a.run_id WHERE a.run_id = $1`, runID, attemptID).Scan(&sameAttempt, &gen); err != nil {
		t.Fatal(err)
	}
	if gen != 2 || sameAttempt == 0 {
		t.Fatalf("re-offer announces generation %d (want 2), attempt kept %d", gen, sameAttempt)
	}
	if ev := f.Events(t, runID); !slices.Equal(ev, []string{"run.lease_released", "run.queued"}) {
		t.Fatalf("events %v", ev)
	}
	// The same Attempt takes the next lease generation (what dispatch's next
	// claim writes) and nothing else changes on another pass.
	f.Exec(t, `INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
		SELECT gen_random_uuid(), run_id, attempt_id, attempt, project_id, worker_id, session_id, session_generation,
			'offer-2', sha256('t2'), 2, 'leased', `+nowSQL+`, `+nowSQL+` + 30000, `+nowSQL+` + 1
		FROM ql3.run_leases WHERE run_id = $1`, runID)
	f.Exec(t, `UPDATE ql3.runs SET status = 'dispatching', version = version + 1 WHERE run_id = $1`, runID)
	if rep := f.Sweep(t); rep.Changed() != 0 {
		t.Fatalf("second pass changed %+v", rep)
	}
}

// TestSweeperLostStartedReleasesLeaseAtomically: a started lease expired
// by more than the grace ends lost with the lease released in one
// transaction; a backend killed inside that transaction leaves nothing.
func TestSweeperLostStartedReleasesLeaseAtomically(t *testing.T) {
	f := newLifeFixture(t)
	ctx := context.Background()
	runID, _ := f.Run(t, lifeRun{Status: "running", Attempt: "running", Lease: "stale"})
	before := f.State(t, runID)

	// Hold the session's exclusive advisory lock so the sweeper's change
	// transaction blocks inside its statement, then kill that backend.
	hold, err := f.Runtime.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`,
		postgres.LockClassSession, postgres.LockObjectKey(f.SessionID)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sweep.Sweep(ctx, f.Runtime, controlplane.SweepOptions{})
		done <- err
	}()
	var pid int32
	for pid == 0 {
		select {
		case err := <-done:
			t.Fatalf("sweep returned before it blocked: %v", err)
		default:
		}
		_ = f.SU.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND wait_event = 'advisory' AND query LIKE '%pg_advisory_xact_lock_shared%' LIMIT 1`).Scan(&pid)
	}
	f.Exec(t, `SELECT pg_terminate_backend($1)`, pid)
	if err := <-done; err == nil {
		t.Fatal("sweep of a killed backend reported success")
	}
	if got := f.State(t, runID); got != before {
		t.Fatalf("killed change left %+v, want %+v", got, before)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rep := f.Sweep(t); rep.Lost != 1 {
		t.Fatalf("report %+v", rep)
	}
	// lost, then (retryOnLost false) failed, each its own transaction.
	got := f.State(t, runID)
	if got.Status != "failed" || got.Attempt != "lost" || got.Lease != "released" || got.Reason != "lease_expired" {
		t.Fatalf("state %+v", got)
	}
	if ev := f.Events(t, runID); !slices.Equal(ev, []string{"run.lost", "run.failed"}) {
		t.Fatalf("events %v", ev)
	}
}

// TestSweeperWaitsForTheGrace: a started lease expired by less than the
// cancel grace is left alone (the worker may still be stopping).
func TestSweeperWaitsForTheGrace(t *testing.T) {
	f := newLifeFixture(t)
	runID, _ := f.Run(t, lifeRun{Status: "running", Attempt: "running", Lease: "expired"})
	before := f.State(t, runID)
	if rep := f.Sweep(t); rep.Changed() != 0 {
		t.Fatalf("report %+v", rep)
	}
	if got := f.State(t, runID); got != before {
		t.Fatalf("state %+v", got)
	}
}

// TestLostRetryRespectsPolicy: lost → failed without retryOnLost or with
// the attempts spent; lost → retry_wait otherwise, and Attempt 2 only once
// the backoff has passed by database time.
func TestLostRetryRespectsPolicy(t *testing.T) {
	f := newLifeFixture(t)
	cases := []struct {
		name     string
		r        lifeRun
		want     string
		backoffs int64
	}{
		{"no retryOnLost", lifeRun{RetryOnLost: false}, "failed", 0},
		{"attempts left", lifeRun{RetryOnLost: true, BackoffMs: 60_000}, "retry_wait", 60_000},
		{"second attempt doubles", lifeRun{RetryOnLost: true, BackoffMs: 60_000, AttemptCount: 2}, "retry_wait", 120_000},
		{"exhausted", lifeRun{RetryOnLost: true, AttemptCount: 3, MaxAttempts: 3}, "failed", 0},
	}
	ids := make([]uuidPair, len(cases))
	for i, c := range cases {
		c.r.Status, c.r.Attempt, c.r.Lease = "running", "running", "stale"
		ids[i].run, ids[i].attempt = f.Run(t, c.r)
	}
	rep := f.Sweep(t)
	if rep.Lost != 4 || rep.RetryWait != 2 || rep.Failed != 2 {
		t.Fatalf("report %+v", rep)
	}
	for i, c := range cases {
		got := f.State(t, ids[i].run)
		if got.Status != c.want {
			t.Errorf("%s: %s, want %s", c.name, got.Status, c.want)
		}
		if c.want != "retry_wait" {
			continue
		}
		var waitMs int64
		if err := f.SU.QueryRow(context.Background(), `SELECT r.not_before_ms - r.updated_at_ms FROM ql3.runs r
			WHERE r.run_id = $1`, ids[i].run).Scan(&waitMs); err != nil {
			t.Fatal(err)
		}
		if waitMs != c.backoffs {
			t.Errorf("%s: waits %d ms, want %d", c.name, waitMs, c.backoffs)
		}
	}
	// Not due yet: nothing is promoted.
	if rep := f.Sweep(t); rep.Promoted != 0 {
		t.Fatalf("promoted before the backoff: %+v", rep)
	}
	// Time passes (the cursor moves into the past by database time).
	f.Exec(t, `UPDATE ql3.runs SET not_before_ms = `+nowSQL+` - 1 WHERE status = 'retry_wait'`)
	if rep := f.Sweep(t); rep.Promoted != 2 {
		t.Fatalf("report %+v", rep)
	}
	for i, c := range cases {
		if c.want != "retry_wait" {
			continue
		}
		got := f.State(t, ids[i].run)
		if got.Status != "queued" || got.Attempt != "claimed" || got.AttemptCount != int64(c.r.AttemptCount+1) && !(c.r.AttemptCount == 0 && got.AttemptCount == 2) {
			t.Errorf("%s after backoff: %+v", c.name, got)
		}
	}
	// A promoted Run is what admission would have written for that Attempt:
	// further passes leave it alone.
	if rep := f.Sweep(t); rep.Changed() != 0 {
		t.Fatalf("promoted Runs changed again: %+v", rep)
	}
}

// TestTwoReplicasSweepDisjointly: two coordinators' pools sweep 1,000
// expired unstarted leases at once; each lease is handled exactly once.
func TestTwoReplicasSweepDisjointly(t *testing.T) {
	f := newLifeFixture(t)
	ctx := context.Background()
	const n = 1000
	for range n {
		f.Run(t, lifeRun{Status: "dispatching", Attempt: "claimed", Lease: "expired"})
	}
	second, err := pgxpool.NewWithConfig(ctx, f.Runtime.Config().Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	var wg sync.WaitGroup
	reps := make([]controlplane.SweepReport, 2)
	errsOut := make([]error, 2)
	for i, pool := range []*pgxpool.Pool{f.Runtime, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := sweep.Sweep(ctx, pool, controlplane.SweepOptions{})
				reps[i].Requeued += r.Requeued
				reps[i].Locked += r.Locked
				if err != nil || r.Changed() == 0 {
					errsOut[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errsOut {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := reps[0].Requeued + reps[1].Requeued; got != n {
		t.Fatalf("requeued %d + %d, want %d in all", reps[0].Requeued, reps[1].Requeued, n)
	}
	if c := f.Count(t, `SELECT count(*) FROM (SELECT run_id FROM ql3.run_events WHERE type = 'run.queued'
		GROUP BY run_id HAVING count(*) = 1) x`); c != n {
		t.Fatalf("%d Runs have exactly one run.queued, want %d", c, n)
	}
	if c := f.Count(t, `SELECT count(*) FROM ql3.run_leases WHERE status = 'leased'`); c != 0 {
		t.Fatalf("%d leases still live", c)
	}
	t.Logf("replica 1 requeued %d (skipped %d locked), replica 2 requeued %d (skipped %d)",
		reps[0].Requeued, reps[0].Locked, reps[1].Requeued, reps[1].Locked)
}

// TestRecoveryLeavesLiveLeasesAlone: a replica (re)starting while 50 Runs
// run under live leases, with pristine queued Runs beside them, changes
// none of them.
func TestRecoveryLeavesLiveLeasesAlone(t *testing.T) {
	f := newLifeFixture(t)
	var ids []uuidPair
	var before []runState
	for i := range 60 {
		r := lifeRun{Status: "running", Attempt: "running", Lease: "live"}
		if i >= 50 {
			r = lifeRun{Status: "queued", Attempt: "claimed"}
		}
		run, att := f.Run(t, r)
		ids = append(ids, uuidPair{run, att})
		before = append(before, f.State(t, run))
	}
	if rep := f.Sweep(t); rep.Changed() != 0 || rep.More {
		t.Fatalf("report %+v", rep)
	}
	for i, id := range ids {
		if got := f.State(t, id.run); got != before[i] {
			t.Fatalf("run %d: %+v, want %+v", i, got, before[i])
		}
	}
}

// TestRecoveryResolvesEveryState: one pass over every Run state × lease
// state (each case in its own database, so the task's other Runs do not
// interfere) ends in the state the lifecycle rules name.
func TestRecoveryResolvesEveryState(t *testing.T) {
	cases := []struct {
		r          lifeRun
		want       string // run status after one pass
		wantLease  string // latest lease status after the pass ("" none)
		wantAttemp int64  // attempt_count after
	}{
		{lifeRun{Status: "created", Attempt: "claimed"}, "queued", "", 1},
		{lifeRun{Status: "queued", Attempt: "claimed"}, "queued", "", 1},
		// A live lease on a Run that is not in flight cannot be written by
		// dispatch (claim and completion move both together); if one exists
		// it is released once it expires, never used.
		{lifeRun{Status: "queued", Attempt: "claimed", Lease: "live"}, "queued", "leased", 1},
		{lifeRun{Status: "queued", Attempt: "claimed", Lease: "expired"}, "queued", "released", 1},
		{lifeRun{Status: "queued", Attempt: "claimed", Intent: "user"}, "cancelled", "", 1},
		{lifeRun{Status: "dispatching", Attempt: "claimed", Lease: "live"}, "dispatching", "leased", 1},
		{lifeRun{Status: "dispatching", Attempt: "claimed", Lease: "expired"}, "queued", "released", 1},
		{lifeRun{Status: "dispatching", Attempt: "claimed", Lease: "released"}, "queued", "released", 1},
		{lifeRun{Status: "dispatching", Attempt: "claimed"}, "queued", "", 1},
		{lifeRun{Status: "dispatching", Attempt: "claimed", Lease: "live", Intent: "user"}, "cancelled", "released", 1},
		{lifeRun{Status: "dispatching", Attempt: "starting", Lease: "live"}, "dispatching", "leased", 1},
		{lifeRun{Status: "dispatching", Attempt: "starting", Lease: "expired"}, "dispatching", "leased", 1},
		{lifeRun{Status: "dispatching", Attempt: "starting", Lease: "stale"}, "failed", "released", 1},
		{lifeRun{Status: "running", Attempt: "running", Lease: "live"}, "running", "leased", 1},
		{lifeRun{Status: "running", Attempt: "running", Lease: "live", Intent: "user"}, "running", "leased", 1},
		{lifeRun{Status: "running", Attempt: "running", Lease: "stale", RetryOnLost: true, BackoffMs: 60_000}, "retry_wait", "released", 1},
		{lifeRun{Status: "running", Attempt: "running", Lease: "stale", Intent: "user"}, "cancelled", "released", 1},
		{lifeRun{Status: "running", Attempt: "running", Lease: "completed"}, "failed", "completed", 1},
		{lifeRun{Status: "running", Attempt: "running"}, "failed", "", 1},
		{lifeRun{Status: "retry_wait", Attempt: "failed"}, "queued", "", 2},
		{lifeRun{Status: "retry_wait", Attempt: "failed", Intent: "timeout"}, "timed_out", "", 1},
		{lifeRun{Status: "lost", Attempt: "lost", Lease: "released"}, "failed", "released", 1},
		{lifeRun{Status: "lost", Attempt: "lost", Lease: "released", RetryOnLost: true, BackoffMs: 60_000}, "retry_wait", "released", 1},
		{lifeRun{Status: "lost", Attempt: "lost", Lease: "released", RetryOnLost: true}, "queued", "released", 2},
		{lifeRun{Status: "lost", Attempt: "lost", Intent: "user"}, "cancelled", "", 1},
		{lifeRun{Status: "succeeded", Attempt: "succeeded", Lease: "completed"}, "succeeded", "completed", 1},
		{lifeRun{Status: "cancelled", Attempt: "cancelled", Lease: "expired"}, "cancelled", "released", 1},
	}
	for _, c := range cases {
		name := c.r.Status + "/" + c.r.Attempt + "/" + c.r.Lease + "/" + c.r.Intent
		t.Run(name, func(t *testing.T) {
			f := newLifeFixture(t)
			runID, _ := f.Run(t, c.r)
			f.CheckQueue(t)
			f.Sweep(t)
			f.CheckQueue(t) // the Run is in the claim's queue exactly when it is queued
			got := f.State(t, runID)
			if got.Status != c.want || got.Lease != c.wantLease || got.AttemptCount != c.wantAttemp {
				t.Fatalf("after one pass %+v, want %s, lease %q, attempt %d", got, c.want, c.wantLease, c.wantAttemp)
			}
			// A second pass changes nothing that is not due later.
			if rep := f.Sweep(t); rep.Changed() != 0 {
				t.Fatalf("second pass changed %+v", rep)
			}
		})
	}
}

// TestRetentionDeletesOldFinishedRuns: retention deletes the log chunks of
// finished Runs past the log age, finished Runs past the run age with all
// their rows, and old audit rows; recent and unfinished Runs, and a Run a
// kept rerun points at, stay.
func TestRetentionDeletesOldFinishedRuns(t *testing.T) {
	f := newLifeFixture(t)
	day := int64(24 * 3600 * 1000)
	old, _ := f.Run(t, lifeRun{Status: "succeeded", Attempt: "succeeded", Lease: "completed"})
	logOnly, _ := f.Run(t, lifeRun{Status: "failed", Attempt: "failed"})
	recent, _ := f.Run(t, lifeRun{Status: "succeeded", Attempt: "succeeded"})
	running, _ := f.Run(t, lifeRun{Status: "running", Attempt: "running", Lease: "live"})
	referenced, _ := f.Run(t, lifeRun{Status: "succeeded", Attempt: "succeeded"})
	for _, id := range []any{old, logOnly, recent, running, referenced} {
		f.Exec(t, `INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms)
			SELECT run_id, 1, 'stdout', 0, project_id, '\x41', `+nowSQL+` - $2::bigint FROM ql3.runs WHERE run_id = $1`, id, 8*day)
		f.Exec(t, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, created_at_ms)
			SELECT run_id, 1, project_id, 'run.created', 1 FROM ql3.runs WHERE run_id = $1`, id)
	}
	f.Exec(t, `UPDATE ql3.runs SET finished_at_ms = `+nowSQL+` - $2::bigint WHERE run_id = ANY($1::uuid[])`,
		[]any{old, referenced}, 31*day)
	f.Exec(t, `UPDATE ql3.runs SET finished_at_ms = `+nowSQL+` - $2::bigint WHERE run_id = $1`, logOnly, 8*day)
	rerun, _ := f.Run(t, lifeRun{Status: "succeeded", Attempt: "succeeded"})
	f.Exec(t, `UPDATE ql3.runs SET origin = 'rerun', rerun_of_run_id = $2 WHERE run_id = $1`, rerun, referenced)
	f.Exec(t, `INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, action, outcome)
		VALUES (gen_random_uuid(), `+nowSQL+` - $1::bigint, 'system', 'test.old', 'ok'),
		       (gen_random_uuid(), `+nowSQL+`, 'system', 'test.new', 'ok')`, 91*day)

	rep := f.Sweep(t)
	if rep.Retention.Runs != 1 || rep.Retention.AuditRows != 1 || rep.Retention.LogChunks < 3 {
		t.Fatalf("retention %+v", rep.Retention)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE run_id = $1`, old); n != 0 {
		t.Fatal("old finished run kept")
	}
	for table, want := range map[string]int64{"attempts": 0, "run_events": 0, "run_leases": 0, "run_log_chunks": 0} {
		if n := f.Count(t, `SELECT count(*) FROM ql3.`+table+` WHERE run_id = $1`, old); n != want {
			t.Fatalf("%d %s rows of the deleted run", n, table)
		}
	}
	for _, id := range []any{logOnly, recent, running, referenced} {
		if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE run_id = $1`, id); n != 1 {
			t.Fatalf("run %v deleted", id)
		}
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.run_log_chunks WHERE run_id = ANY($1::uuid[])`, []any{logOnly, referenced}); n != 0 {
		t.Fatalf("%d old log chunks of finished runs kept", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.run_log_chunks WHERE run_id = $1`, running); n != 1 {
		t.Fatal("log of an unfinished run deleted")
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.audit_log WHERE action LIKE 'test.%'`); n != 1 {
		t.Fatalf("%d test audit rows left, want 1", n)
	}
	if err := (controlplane.SweepOptions{LogRetention: 40 * 24 * time.Hour}).Validate(); errs.Field(err) != "logRetention" {
		t.Fatalf("log retention beyond run retention: %v", err)
	}
}

// TestSessionLossHandlesLeasesNow: the unstarted leases of a session that
// was replaced, went offline or whose heartbeat lease passed are released
// at once (not after their own TTL); a started lease of a closed session
// waits the grace from the close.
func TestSessionLossHandlesLeasesNow(t *testing.T) {
	f := newLifeFixture(t)
	worker2, worker3 := uuid.New(), uuid.New()
	for _, w := range []uuid.UUID{worker2, worker3} {
		f.Exec(t, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms)
			VALUES ($1::uuid, 'w-' || $1::uuid::text, 'active', 1, 1)`, w)
	}
	replaced, offline, expired := uuid.New(), uuid.New(), uuid.New()
	f.Session(t, replaced, worker2, 1, "offline", 60_000)
	f.Session(t, uuid.New(), worker2, 2, "online", 60_000)
	f.Session(t, offline, worker3, 1, "offline", 60_000)
	// The fixture's session (generation 1) closes; generation 2 is live but
	// its heartbeat lease passed.
	f.Exec(t, `UPDATE ql3.worker_sessions SET status = 'offline', closed_at_ms = updated_at_ms WHERE session_id = $1`, f.SessionID)
	f.Session(t, expired, f.WorkerID, 2, "draining", -1000)
	cases := []struct {
		session uuid.UUID
		attempt string
		reason  string
		status  string
	}{
		{replaced, "claimed", "session_replaced", "queued"},
		{offline, "claimed", "session_offline", "queued"},
		{expired, "claimed", "session_expired", "queued"},
		{offline, "running", "", "running"}, // started: the grace from the close has not passed
	}
	ids := make([]uuid.UUID, len(cases))
	for i, c := range cases {
		st := "dispatching"
		if c.attempt == "running" {
			st = "running"
		}
		ids[i], _ = f.Run(t, lifeRun{Status: st, Attempt: c.attempt, Lease: "live", Session: c.session})
	}
	f.Sweep(t)
	for i, c := range cases {
		got := f.State(t, ids[i])
		if got.Status != c.status || got.Reason != c.reason {
			t.Errorf("%s/%s: %+v, want %s (%q)", c.reason, c.attempt, got, c.status, c.reason)
		}
	}
	// The close was long ago: the started lease is lost now.
	f.Exec(t, `UPDATE ql3.worker_sessions SET closed_at_ms = closed_at_ms - 60000, updated_at_ms = updated_at_ms - 60000,
		opened_at_ms = opened_at_ms - 60000 WHERE session_id = $1`, offline)
	f.Sweep(t)
	if got := f.State(t, ids[3]); got.Status != "failed" || got.Attempt != "lost" || got.Reason != "lease_expired" {
		t.Fatalf("started lease of a closed session: %+v", got)
	}
}

// TestDeadlineSetsTimeoutIntent: a started Attempt past its durable
// deadline gets the timeout intent and one run.cancel_requested (its
// worker then gets cancel at the next heartbeat); the Run keeps running
// until the completion, and a second pass asks nothing more.
func TestDeadlineSetsTimeoutIntent(t *testing.T) {
	f := newLifeFixture(t)
	runID, _ := f.Run(t, lifeRun{Status: "running", Attempt: "running", Lease: "live"})
	f.Exec(t, `UPDATE ql3.attempts SET deadline_at_ms = `+nowSQL+` - 1 WHERE run_id = $1`, runID)
	if rep := f.Sweep(t); rep.TimedOut != 1 {
		t.Fatalf("report %+v", rep)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE run_id = $1 AND status = 'running'
		AND cancel_reason = 'timeout' AND cancel_requested_at_ms IS NOT NULL`, runID); n != 1 {
		t.Fatal("no timeout intent")
	}
	if ev := f.Events(t, runID); !slices.Equal(ev, []string{"run.cancel_requested"}) {
		t.Fatalf("events %v", ev)
	}
	if rep := f.Sweep(t); rep.Changed() != 0 {
		t.Fatalf("second pass %+v", rep)
	}
}
