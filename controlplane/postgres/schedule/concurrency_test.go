package schedule_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/spec"
)

// occurrence admits the next due occurrence of tr and returns its Run id.
func occurrence(f lifeFixture, t *testing.T, tr schedTrigger, agoMs int64) uuid.UUID {
	t.Helper()
	f.MakeDue(t, tr.ID, agoMs)
	ad := decideFor(t, f.Claim(t, "a", 1)[0])
	if got := admit(t, f.Sched, ad); !slices.Equal(got, []controlplane.Outcome{controlplane.OutcomeAdmitted}) {
		t.Fatalf("admission %v", got)
	}
	return ad.RunID
}

// longRunning turns an admitted Run into one running under a live lease.
func longRunning(f lifeFixture, t *testing.T, runID uuid.UUID) {
	t.Helper()
	f.Exec(t, `UPDATE ql3.attempts SET status = 'running', started_at_ms = created_at_ms, worker_id = $2,
		session_id = $3, session_generation = 1, offer_id = 'o-' || run_id::text, version = version + 1
		WHERE run_id = $1`, runID, f.WorkerID, f.SessionID)
	f.Exec(t, `UPDATE ql3.runs SET status = 'running', version = version + 1 WHERE run_id = $1`, runID)
	f.Exec(t, `INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
		SELECT gen_random_uuid(), a.run_id, a.attempt_id, 1, a.project_id, a.worker_id, a.session_id, 1, a.offer_id,
			sha256(a.offer_id::bytea), 1, 'leased', `+nowSQL+`, `+nowSQL+` + 45000, `+nowSQL+`
		FROM ql3.attempts a WHERE a.run_id = $1`, runID)
}

// TestConcurrencyForbidSkips: with a Run of the task still running, the
// next occurrence is admitted as skipped (cancelled, run.skipped, no
// Attempt); once it ended, the next one runs.
func TestConcurrencyForbidSkips(t *testing.T) {
	f := newLifeFixture(t).WithPolicy(t, spec.ConcurrencyForbid)
	tr := f.Trigger(t, "* * * * * *", "skip")
	admit(t, f.Sched, decideFor(t, f.Claim(t, "a", 1)[0]))
	first := occurrence(f, t, tr, 3000)
	longRunning(f, t, first)
	second := occurrence(f, t, tr, 2000)
	if got := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE run_id = $1 AND status = 'cancelled'
		AND attempt_count = 0 AND finished_at_ms IS NOT NULL`, second); got != 1 {
		t.Fatalf("second occurrence not skipped")
	}
	if ev := f.Events(t, second); !slices.Equal(ev, []string{"run.created", "run.skipped"}) {
		t.Fatalf("events %v", ev)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.attempts WHERE run_id = $1`, second); n != 0 {
		t.Fatalf("skipped Run has %d attempts", n)
	}
	if got := f.State(t, first); got.Status != "running" {
		t.Fatalf("first %+v", got)
	}
	f.Exec(t, `UPDATE ql3.run_leases SET status = 'completed', ended_at_ms = `+nowSQL+`, updated_at_ms = `+nowSQL+` WHERE run_id = $1`, first)
	f.Exec(t, `UPDATE ql3.attempts SET status = 'succeeded', finished_at_ms = `+nowSQL+` WHERE run_id = $1`, first)
	f.Exec(t, `UPDATE ql3.runs SET status = 'succeeded', finished_at_ms = `+nowSQL+` WHERE run_id = $1`, first)
	third := occurrence(f, t, tr, 1000)
	if got := f.State(t, third); got.Status != "queued" {
		t.Fatalf("third after the first ended: %+v", got)
	}
}

// TestConcurrencyReplaceCancelsActive: the next occurrence is held
// (created) while the running Run gets the cancel intent "replace" (which
// the worker receives as cancel at its next heartbeat); once that Run
// ended, the held one is queued.
func TestConcurrencyReplaceCancelsActive(t *testing.T) {
	f := newLifeFixture(t).WithPolicy(t, spec.ConcurrencyReplace)
	tr := f.Trigger(t, "* * * * * *", "skip")
	admit(t, f.Sched, decideFor(t, f.Claim(t, "a", 1)[0]))
	first := occurrence(f, t, tr, 2000)
	longRunning(f, t, first)
	second := occurrence(f, t, tr, 1000)
	if got := f.State(t, second); got.Status != "created" {
		t.Fatalf("second %+v", got)
	}
	if rep := f.Sweep(t); rep.Replaced != 1 || rep.Queued != 0 {
		t.Fatalf("report %+v", rep)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE run_id = $1 AND status = 'running'
		AND cancel_reason = 'replace' AND cancel_requested_at_ms IS NOT NULL`, first); n != 1 {
		t.Fatal("the running Run has no replace intent")
	}
	if ev := f.Events(t, first); ev[len(ev)-1] != "run.cancel_requested" {
		t.Fatalf("events of the replaced Run %v", ev)
	}
	// Repeated passes neither ask again nor queue the held Run early.
	if rep := f.Sweep(t); rep.Changed() != 0 {
		t.Fatalf("second pass %+v", rep)
	}
	// The worker stopped it (what the completion writes).
	f.Exec(t, `UPDATE ql3.run_leases SET status = 'completed', ended_at_ms = `+nowSQL+`, updated_at_ms = `+nowSQL+` WHERE run_id = $1`, first)
	f.Exec(t, `UPDATE ql3.attempts SET status = 'cancelled', finished_at_ms = `+nowSQL+` WHERE run_id = $1`, first)
	f.Exec(t, `UPDATE ql3.runs SET status = 'cancelled', finished_at_ms = `+nowSQL+` WHERE run_id = $1`, first)
	if rep := f.Sweep(t); rep.Queued != 1 {
		t.Fatalf("report %+v", rep)
	}
	if got := f.State(t, second); got.Status != "queued" || got.Attempt != "claimed" {
		t.Fatalf("second %+v", got)
	}
}
