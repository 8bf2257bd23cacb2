package dispatch_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/placement/matcher"
	"github.com/ql3/ql3/core/protocol"
)

// TestPullPlacementCasesThroughDatabase runs the matcher's golden cases
// through the database path: the requirements pinned in an execution
// revision, the capabilities stored on a session, one queued Run; the pull
// offers it exactly when the case matches.
func TestPullPlacementCasesThroughDatabase(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../core/placement/matcher/testdata/match_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name         string                 `json:"name"`
		Requirements placement.Requirements `json:"requirements"`
		Capabilities placement.Capabilities `json:"capabilities"`
		Want         struct {
			OK bool `json:"ok"`
		} `json:"want"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	var matched, refused int
	for _, tc := range cases {
		if _, err := matcher.Prepare(tc.Capabilities); err != nil {
			continue // the ingress refuses such a session at open; nothing to pull with
		}
		cmd := testSpec()
		if req := tc.Requirements.Normalize(); !req.IsZero() {
			cmd.Placement = &req
		}
		if _, err := cmd.Canonical(); err != nil {
			continue // not a publishable placement (the case tests the matcher alone)
		}
		r := e.queue(e.revision(cmd), 0)
		w := e.worker(tc.Capabilities, 1)
		o, _ := e.pull(w)
		if got := o != nil; got != tc.Want.OK {
			t.Errorf("%s: offered = %v, want %v", tc.Name, got, tc.Want.OK)
		}
		if o != nil {
			matched++
			if o.RunID != r.run.String() {
				t.Errorf("%s: offered run %s, want %s", tc.Name, o.RunID, r.run)
			}
		} else {
			refused++
		}
		// Take the Run out of the candidate set for the next case.
		e.exec(`UPDATE ql3.runs SET status = 'cancelled', finished_at_ms = 1, cancel_requested_at_ms = 1, cancel_reason = 'user'
			WHERE run_id = $1`, r.run)
	}
	if matched == 0 || refused == 0 {
		t.Fatalf("cases exercised: %d matched, %d refused; want both", matched, refused)
	}
}

// TestPullPreferredScoreOrdersWithinPriority: among Runs of one priority a
// higher placement score goes first; priority still beats score.
func TestPullPreferredScoreOrdersWithinPriority(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	plain := e.revision(testSpec())
	preferring := testSpec()
	preferring.Placement = &placement.Requirements{Preferred: []placement.Preference{{Label: "zone", Value: "a", Weight: 50}}}
	pref := e.revision(preferring)
	older := e.queue(plain, 0)
	newer := e.queue(pref, 0)
	urgent := e.queue(plain, 5)
	caps := linuxCaps()
	caps.Labels = map[string]string{"zone": "a"}
	w := e.worker(caps, 8)
	var got []string
	for range 3 {
		o, _ := e.pull(w)
		if o == nil {
			t.Fatal("no offer")
		}
		got = append(got, o.RunID)
	}
	want := []string{urgent.run.String(), newer.run.String(), older.run.String()}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("offer order %v, want %v (priority, then score, then FIFO)", got, want)
		}
	}
}

// TestPullBoundsIneligible: 100 candidates this session cannot run give
// nothing (nil offer, Retry-After), reading at most pages × rows, and the
// truncation is counted; with the hard limits it reads all 100.
func TestPullBoundsIneligible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		opts         dispatch.DispatchOptions
		read, truncs int64
		pages        int64
	}{
		{"defaults 2x8", dispatch.DispatchOptions{}, 16, 2, 2},
		{"hard limits 16x64", dispatch.DispatchOptions{PullPages: dispatch.MaxPullPages, PullPageRows: dispatch.MaxPullPageRows,
			PullClaims: dispatch.MaxPullClaims}, 100, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDispatchEnv(t, tc.opts)
			cmd := testSpec()
			cmd.Placement = &placement.Requirements{Required: placement.Required{Labels: map[string]string{"zone": "elsewhere"}}}
			rev := e.revision(cmd)
			for range 100 {
				e.queue(rev, 0)
			}
			w := e.worker(linuxCaps(), 4)
			o, retry, err := e.d.Pull(e.ctx, w.p, w.pullReq(t))
			if err != nil || o != nil {
				t.Fatalf("pull = %v, %v; want nothing", o, err)
			}
			if retry <= 0 {
				t.Errorf("retry-after %v, want > 0", retry)
			}
			s := e.d.Stats()
			if s.CandidatesRead != tc.read || s.Ineligible != tc.read || s.Truncs != tc.truncs || s.PagesRead != tc.pages {
				t.Errorf("stats %+v, want read=ineligible=%d truncs=%d pages=%d", s, tc.read, tc.truncs, tc.pages)
			}
			if s.CandidatesRead > dispatch.MaxPullPages*dispatch.MaxPullPageRows {
				t.Errorf("read %d candidates, beyond the hard limit", s.CandidatesRead)
			}
			if n := e.scalar(`SELECT count(*) FROM ql3.run_leases`); n != 0 {
				t.Errorf("%d leases written by an empty pull", n)
			}
		})
	}
}

// TestConcurrentPullsNeverShareRun: 32 sessions pull 200 Runs at once;
// every Run ends with exactly one live lease and one run.dispatched event.
func TestConcurrentPullsNeverShareRun(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	const runs, sessions = 200, 32
	for range runs {
		e.queue(rev, 0)
	}
	workers := make([]*dispatchWorker, sessions)
	for i := range workers {
		workers[i] = e.worker(linuxCaps(), 16)
	}
	var offers atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, sessions)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: an empty answer while Runs remain is a lost race
			// for the same candidates; keep pulling until all are placed.
			for i := 0; i < 4*runs && offers.Load() < runs; i++ {
				o, _, err := e.d.Pull(e.ctx, w.p, w.pullReq(t))
				if err != nil {
					errc <- err
					return
				}
				if o != nil {
					offers.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got := offers.Load(); got != runs {
		t.Fatalf("%d offers, want %d", got, runs)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases`); n != runs {
		t.Errorf("%d leases, want %d", n, runs)
	}
	if n := e.scalar(`SELECT count(*) FROM (SELECT run_id FROM ql3.run_leases WHERE status = 'leased' GROUP BY run_id HAVING count(*) = 1) x`); n != runs {
		t.Errorf("%d runs with exactly one live lease, want %d", n, runs)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_events WHERE type = 'run.dispatched'`); n != runs {
		t.Errorf("%d run.dispatched events, want %d", n, runs)
	}
	if n := e.scalar(`SELECT count(*) FROM (SELECT session_id FROM ql3.run_leases GROUP BY session_id HAVING count(*) > 16) x`); n != 0 {
		t.Errorf("%d sessions above their capacity", n)
	}
	e.checkQueue() // every claimed Run left the queue
}

// TestCapacityNotOversold: capacity 2 and 10 concurrent pulls → 2 leases.
func TestCapacityNotOversold(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	for range 10 {
		e.queue(rev, 0)
	}
	w := e.worker(linuxCaps(), 2)
	var offers atomic.Int64
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, _, err := e.d.Pull(e.ctx, w.p, w.pullReq(t))
			if err != nil {
				t.Error(err)
			}
			if o != nil {
				offers.Add(1)
			}
		}()
	}
	wg.Wait()
	if offers.Load() != 2 {
		t.Errorf("%d offers, want 2", offers.Load())
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases WHERE session_id = $1 AND status = 'leased'`, w.session); n != 2 {
		t.Errorf("%d live leases, want 2", n)
	}
}

// TestPullReplayIdenticalOffer: the response to a successful claim is lost;
// the identical request gets the byte-identical offer, still one lease and
// one run.dispatched event, and no plaintext token anywhere in the row.
func TestPullReplayIdenticalOffer(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0)
	w := e.worker(linuxCaps(), 1)
	first, req := e.pull(w)
	if first == nil {
		t.Fatal("no offer")
	}
	firstBytes, err := first.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.AnswersPull(req); err != nil {
		t.Fatalf("offer does not answer its pull: %v", err)
	}
	// The task identity and the occurrence, for the process's environment.
	if want := e.scalar(`SELECT task_revision FROM ql3.runs WHERE run_id = $1`, r.run); first.TaskID != e.task.String() ||
		first.TaskRevision != want || first.ScheduledForMs != 1 {
		t.Errorf("offer task %s revision %d scheduled %d; want %s, %d, 1", first.TaskID, first.TaskRevision,
			first.ScheduledForMs, e.task, want)
	}
	again, _, err := e.d.Pull(e.ctx, w.p, req)
	if err != nil || again == nil {
		t.Fatalf("replay = %v, %v", again, err)
	}
	againBytes, err := again.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(firstBytes, againBytes) {
		t.Errorf("replayed offer differs:\n%s\n%s", firstBytes, againBytes)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases WHERE run_id = $1`, r.run); n != 1 {
		t.Errorf("%d leases, want 1", n)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_events WHERE run_id = $1 AND type = 'run.dispatched'`, r.run); n != 1 {
		t.Errorf("%d dispatched events, want 1", n)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases l, ql3.run_events v
		WHERE position(convert_to($1, 'UTF8') IN l.token_digest) > 0 OR strpos(v.payload::text, $1) > 0`, string(req.LeaseToken)); n != 0 {
		t.Errorf("plaintext token found in the database")
	}
}

// TestPullReplayDrift: every drift of the replayed request or of the lease
// behind it is a conflict, never a second lease.
func TestPullReplayDrift(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		drift func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest)
	}{
		{"token", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			req.LeaseToken = newToken(e.t)
		}},
		{"token reused for another offer id", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			req.OfferID = w.pullReq(e.t).OfferID
		}},
		{"replaced session", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			e.replace(w)
		}},
		{"expired lease", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			e.exec(`UPDATE ql3.run_leases SET expires_at_ms = leased_at_ms + 1 WHERE run_id = $1`, r.run)
		}},
		{"terminal lease", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			e.exec(`UPDATE ql3.run_leases SET status = 'released', release_reason = 'test', ended_at_ms = updated_at_ms WHERE run_id = $1`, r.run)
		}},
		{"attempt changed", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			e.exec(`UPDATE ql3.attempts SET status = 'starting' WHERE attempt_id = $1`, r.attempt)
		}},
		{"revision changed", func(e *dispatchEnv, w *dispatchWorker, r seededRun, req *protocol.OfferPullRequest) {
			cmd := testSpec()
			cmd.TimeoutMs = 30_000
			other := e.revision(cmd)
			e.exec(`UPDATE ql3.runs r SET execution_revision_id = x.execution_revision_id, execution_digest = x.digest,
				task_revision = x.task_revision FROM ql3.execution_revisions x WHERE r.run_id = $1 AND x.execution_revision_id = $2`, r.run, other)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDispatchEnv(t, dispatch.DispatchOptions{})
			r := e.queue(e.revision(testSpec()), 0)
			e.queue(e.revision(testSpec()), 0) // something a wrongly-new claim could take
			w := e.worker(linuxCaps(), 4)
			o, req := e.pull(w)
			if o == nil || o.RunID != r.run.String() {
				t.Fatalf("first pull = %+v", o)
			}
			tc.drift(e, w, r, &req)
			got, _, err := e.d.Pull(e.ctx, w.p, req)
			if errs.Code(err) != errs.Conflict || got != nil {
				t.Fatalf("replay after drift = %v, %v; want conflict", got, err)
			}
			if n := e.scalar(`SELECT count(*) FROM ql3.run_leases`); n != 1 {
				t.Errorf("%d leases, want 1", n)
			}
			if n := e.scalar(`SELECT count(*) FROM ql3.run_events WHERE type = 'run.dispatched'`); n != 1 {
				t.Errorf("%d dispatched events, want 1", n)
			}
		})
	}
}

// TestExpiredUnstartedLeaseIsOfferedAgain: a lease that expired before the
// starting ACK is released by the lease sweep, which queues the Run again
// (run.lease_released, run.queued; ADR 0064: the claim reads only the
// queue); the next claim offers the same Attempt with lease generation + 1;
// the first holder's ack is refused and its renewal revoked.
func TestExpiredUnstartedLeaseIsOfferedAgain(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0)
	slow, fast := e.worker(linuxCaps(), 1), e.worker(linuxCaps(), 1)
	first := e.take(slow)
	if o, _ := e.pull(fast); o != nil {
		t.Fatalf("a live unstarted lease was offered again: %+v", o)
	}
	e.exec(`UPDATE ql3.run_leases SET expires_at_ms = leased_at_ms + 1 WHERE run_id = $1`, r.run)
	// The Run is not in the claim's queue (ADR 0064): the lease sweep
	// releases the expired lease and queues the Run again.
	if o, _ := e.pull(fast); o != nil {
		t.Fatalf("a dispatching Run was claimed before the sweep requeued it: %+v", o)
	}
	if rep := pgfixture.SweepOn(t, e.runtime); rep.Requeued != 1 {
		t.Fatalf("sweep %+v, want one requeue", rep)
	}
	second := e.take(fast)
	if second.o.RunID != r.run.String() || second.o.AttemptID != r.attempt.String() || second.o.LeaseGeneration != 2 {
		t.Fatalf("re-offer %+v, want the same attempt with lease generation 2", second.o)
	}
	want := []string{"run.created", "run.queued", "run.dispatched", "run.lease_released", "run.queued", "run.dispatched"}
	if got := e.events(r.run); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases WHERE run_id = $1 AND status = 'released' AND lease_generation = 1`, r.run); n != 1 {
		t.Errorf("first lease not released")
	}
	if _, err := e.ack(first, protocol.AckStarting); errs.Code(err) != errs.Conflict {
		t.Errorf("ack under the released lease: %v, want conflict", err)
	}
	controls, err := e.d.RenewForHeartbeat(e.ctx, slow.p, slow.session.String(), slow.generation, []string{first.o.AttemptID})
	if err != nil || controls[0].Action != protocol.LeaseRevoke {
		t.Errorf("renewal under the released lease: %+v %v, want revoke", controls, err)
	}
	e.mustAck(second, protocol.AckStarting)
}

// TestConcurrentIdenticalPullsMakeOneLease: the same pull sent twice at
// once (a retry racing the original) makes one lease; both get the offer.
func TestConcurrentIdenticalPullsMakeOneLease(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	for range 4 {
		e.queue(rev, 0)
	}
	w := e.worker(linuxCaps(), 4)
	req := w.pullReq(t)
	var wg sync.WaitGroup
	offers := make([]*protocol.Offer, 8)
	for i := range offers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, _, err := e.d.Pull(e.ctx, w.p, req)
			if err != nil {
				t.Errorf("pull %d: %v", i, err)
			}
			offers[i] = o
		}()
	}
	wg.Wait()
	for i, o := range offers {
		if o == nil || o.RunID != offers[0].RunID || o.LeaseExpiresAtMs != offers[0].LeaseExpiresAtMs {
			t.Errorf("pull %d got %+v, want the one offer", i, o)
		}
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases`); n != 1 {
		t.Errorf("%d leases, want 1", n)
	}
	// One claim; every other identical pull is a replay, whether its first
	// read already saw the lease or its pipelined claim found the offer id
	// used and the claim transaction rebuilt it under the lock (ADR 0031).
	if s := e.d.Stats(); s.Offers != 1 || s.Replays != int64(len(offers)-1) {
		t.Errorf("stats %+v: want 1 offer and %d replays", s, len(offers)-1)
	}
}
