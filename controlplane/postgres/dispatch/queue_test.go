package dispatch_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
)

// checkQueue fails the test unless ql3.run_queue (migration 0022) holds
// exactly one row per queued Run, with the Run's key, revision and
// not_before_ms.
func (e *dispatchEnv) checkQueue() {
	e.t.Helper()
	if n := e.scalar(`SELECT count(*) FROM ql3.run_queue q
		FULL JOIN (SELECT run_id, priority, created_at_ms, execution_revision_id, execution_digest, not_before_ms
			FROM ql3.runs WHERE status = 'queued') r
			ON r.run_id = q.run_id AND r.priority = q.priority AND r.created_at_ms = q.created_at_ms
			AND r.execution_revision_id = q.execution_revision_id AND r.execution_digest = q.execution_digest
			AND r.not_before_ms = q.not_before_ms
		WHERE q.run_id IS NULL OR r.run_id IS NULL`); n != 0 {
		e.t.Fatalf("run_queue differs from the queued Runs in %d rows", n)
	}
}

// TestClaimDrainsTheQueue: queued Runs are in the claim's queue in claim
// order; each claim deletes exactly its Run's row (a claimed Run is
// dispatching, never read again by a claim), and the lease sweep's
// requeue of an expired unstarted lease puts the Run back.
func TestClaimDrainsTheQueue(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	low, high := e.queue(rev, 0), e.queue(rev, 5)
	e.checkQueue()
	if n := e.scalar(`SELECT count(*) FROM ql3.run_queue`); n != 2 {
		t.Fatalf("%d queue rows, want 2", n)
	}
	w := e.worker(linuxCaps(), 4)
	first := e.take(w)
	if first.o.RunID != high.run.String() {
		t.Fatalf("first claim took %s, want the higher priority %s", first.o.RunID, high.run)
	}
	e.checkQueue()
	if n := e.scalar(`SELECT count(*) FROM ql3.run_queue WHERE run_id = $1`, high.run); n != 0 {
		t.Fatalf("the claimed Run kept its queue row")
	}
	// An expired unstarted lease: the sweep's requeue puts the Run back in
	// the queue and the next claim takes it at lease generation 2.
	e.exec(`UPDATE ql3.run_leases SET expires_at_ms = leased_at_ms + 1 WHERE run_id = $1`, high.run)
	if rep := pgfixture.SweepOn(t, e.runtime); rep.Requeued != 1 {
		t.Fatalf("sweep %+v, want one requeue", rep)
	}
	e.checkQueue()
	again := e.take(w)
	if again.o.RunID != high.run.String() || again.o.LeaseGeneration != 2 {
		t.Fatalf("re-claim %+v, want %s at lease generation 2", again.o, high.run)
	}
	e.checkQueue()
	// Any write that queues a Run puts it back; the cancel of a queued Run
	// takes it out.
	e.exec(`UPDATE ql3.runs SET status = 'queued', version = version + 1 WHERE run_id = $1`, high.run)
	e.checkQueue()
	e.exec(`UPDATE ql3.runs SET status = 'cancelled', finished_at_ms = updated_at_ms, version = version + 1 WHERE run_id = $1`, low.run)
	e.checkQueue()
	if n := e.scalar(`SELECT count(*) FROM ql3.run_queue`); n != 1 {
		t.Fatalf("%d queue rows, want 1 (the requeued Run)", n)
	}
}
