package dispatch_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// batchReq is a batched pull of n fresh items for w.
func (w *dispatchWorker) batchReq(t testing.TB, n int) (protocol.OfferPullBatch, map[string]fence.LeaseToken) {
	req := protocol.OfferPullBatch{V: protocol.Version, SessionID: w.session.String(), Generation: w.generation}
	tokens := map[string]fence.LeaseToken{}
	for range n {
		it := protocol.OfferPullItem{OfferID: uuid.Must(uuid.NewV7()).String(), LeaseToken: newToken(t)}
		req.Pulls = append(req.Pulls, it)
		tokens[it.OfferID] = it.LeaseToken
	}
	return req, tokens
}

func encodeAll(t *testing.T, offers []*protocol.Offer) [][]byte {
	t.Helper()
	var out [][]byte
	for _, o := range offers {
		raw, err := o.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// TestPullBatchClaimsInOneTransaction: a batched pull claims up to the
// session's free capacity, FIFO, in item order, with one commit; each
// offer answers its own item; a repeated batch rebuilds every offer byte
// for byte and makes no second lease or event.
func TestPullBatchClaimsInOneTransaction(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	var runs []uuid.UUID
	for range 5 {
		runs = append(runs, e.queue(rev, 0).run)
	}
	w := e.worker(linuxCaps(), 3)
	req, _ := w.batchReq(t, 4) // one item more than the capacity
	offers, _, err := e.d.PullBatch(e.ctx, w.p, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != 3 {
		t.Fatalf("%d offers, want 3 (the capacity)", len(offers))
	}
	for i, o := range offers {
		if err := o.AnswersPull(req.Request(i)); err != nil {
			t.Errorf("offer %d: %v", i, err)
		}
		if o.RunID != runs[i].String() {
			t.Errorf("offer %d is run %s, want %s (FIFO)", i, o.RunID, runs[i])
		}
	}
	if s := e.d.Stats(); s.BatchPulls != 1 || s.BatchOffers != 3 || s.Rereads != 0 {
		t.Errorf("stats %+v: want one batch of 3 offers, no re-read", s)
	}
	first := encodeAll(t, offers)
	again, _, err := e.d.PullBatch(e.ctx, w.p, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeAll(t, again); !slices.EqualFunc(got, first, bytes.Equal) {
		t.Errorf("a repeated batch answered differently:\n%s\n%s", got, first)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases WHERE session_id = $1`, w.session); n != 3 {
		t.Errorf("%d leases, want 3", n)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_events WHERE type = 'run.dispatched'`); n != 3 {
		t.Errorf("%d dispatched events, want 3", n)
	}
	// Each item is also its own pull: the single route replays it too.
	one, _, err := e.d.Pull(e.ctx, w.p, req.Request(1))
	if err != nil || one == nil {
		t.Fatalf("single replay of item 1 = %v, %v", one, err)
	}
	if raw := encodeAll(t, []*protocol.Offer{one}); !bytes.Equal(raw[0], first[1]) {
		t.Errorf("single replay differs from the batch's offer")
	}
	// Full session: nothing, not an error.
	full, _ := w.batchReq(t, 2)
	if o, _, err := e.d.PullBatch(e.ctx, w.p, full); err != nil || len(o) != 0 {
		t.Errorf("full session: %d offers, %v", len(o), err)
	}
}

// TestPullBatchRefusals: the session fence and token reuse are refused as
// for a single pull, and a batch whose items repeat a token is invalid.
func TestPullBatchRefusals(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	e.queue(e.revision(testSpec()), 0)
	w := e.worker(linuxCaps(), 2)
	other := e.worker(linuxCaps(), 2)
	req, _ := w.batchReq(t, 2)
	if _, _, err := e.d.PullBatch(e.ctx, other.p, req); errs.Code(err) != errs.Conflict {
		t.Errorf("another worker's session: %v, want conflict", err)
	}
	stale := req
	stale.Generation = 2
	if _, _, err := e.d.PullBatch(e.ctx, w.p, stale); errs.Code(err) != errs.Conflict {
		t.Errorf("wrong generation: %v, want conflict", err)
	}
	o, single := e.pull(w)
	if o == nil {
		t.Fatal("no offer")
	}
	reuse, _ := w.batchReq(t, 1)
	reuse.Pulls[0].LeaseToken = single.LeaseToken
	if _, _, err := e.d.PullBatch(e.ctx, w.p, reuse); errs.Code(err) != errs.Conflict || !strings.Contains(errs.Field(err), "leaseToken") {
		t.Errorf("reused token: %v, want conflict on leaseToken", err)
	}
	dup, _ := w.batchReq(t, 2)
	dup.Pulls[1].LeaseToken = dup.Pulls[0].LeaseToken
	if _, _, err := e.d.PullBatch(e.ctx, w.p, dup); errs.Code(err) != errs.Invalid {
		t.Errorf("repeated token inside a batch: %v, want invalid", err)
	}
}

// TestLeaseBatchLifecycle: starting acks in one batch, then the running
// acks riding with the completions in another: every item answered as its
// own route answers it, the events and payloads those of the single
// routes, each item written through the fenced path; a repeated batch
// answers the replays (ack extend, completion duplicate) without writing.
func TestLeaseBatchLifecycle(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	var runs []seededRun
	for range 3 {
		runs = append(runs, e.queue(rev, 0))
	}
	w := e.worker(linuxCaps(), 3)
	req, tokens := w.batchReq(t, 3)
	offers, _, err := e.d.PullBatch(e.ctx, w.p, req)
	if err != nil || len(offers) != 3 {
		t.Fatalf("pull batch: %d offers, %v", len(offers), err)
	}
	var starting, finish protocol.LeaseBatch
	starting.V, finish.V = protocol.Version, protocol.Version
	for _, o := range offers {
		ref := o.Lease(tokens[o.OfferID])
		starting.Acks = append(starting.Acks, protocol.Ack{V: protocol.Version, LeaseRef: ref, Phase: protocol.AckStarting})
		finish.Acks = append(finish.Acks, protocol.Ack{V: protocol.Version, LeaseRef: ref, Phase: protocol.AckRunning})
		finish.Completions = append(finish.Completions, protocol.Completion{V: protocol.Version, LeaseRef: ref,
			Status: run.AttemptSucceeded, ExitCode: exitCode(0), StartedAtMs: 1, FinishedAtMs: 2})
	}
	a, err := e.d.LeaseBatch(e.ctx, w.p, starting)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range a.Acks {
		if o.Error != nil || o.Control.Action != protocol.LeaseExtend || o.Control.LeaseVersion != 2 {
			t.Errorf("starting %d: %+v %+v", i, o.Error, o.Control)
		}
	}
	for _, r := range runs {
		if rs, as := e.status(r.run); rs != "dispatching" || as != "starting" {
			t.Errorf("after the starting batch: run %s attempt %s", rs, as)
		}
	}
	a, err = e.d.LeaseBatch(e.ctx, w.p, finish)
	if err != nil {
		t.Fatal(err)
	}
	for i := range finish.Acks {
		if o := a.Acks[i]; o.Error != nil || o.Control.Action != protocol.LeaseExtend {
			t.Errorf("running %d: %+v %+v", i, o.Error, o.Control)
		}
		if o := a.Completions[i]; o.Error != nil || o.Receipt.Disposition != protocol.Recorded {
			t.Errorf("completion %d: %+v %+v", i, o.Error, o.Receipt)
		}
	}
	want := []string{"run.created", "run.queued", "run.dispatched", "run.starting", "run.running", "run.succeeded"}
	for _, r := range runs {
		if got := e.events(r.run); !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		var got string
		if err := e.su.QueryRow(e.ctx, `SELECT payload::text FROM ql3.run_events WHERE run_id = $1 AND type = 'run.running'`,
			r.run).Scan(&got); err != nil || got != `{"to": "running", "from": "dispatching", "attemptId": "`+r.attempt.String()+`", "attemptNumber": 1}` {
			t.Errorf("running payload %s (%v)", got, err)
		}
	}
	if s := e.d.Stats(); s.FencedAcks != 6 || s.FencedCompletions != 3 || s.LeaseBatches != 2 || s.Rides != 3 {
		t.Errorf("stats %+v: want 6 fenced acks, 3 fenced completions, 2 batches, 3 rides", s)
	}
	// The ride wrote what the two requests write one after the other: the
	// same events and payloads, the times stamped, the lease completed.
	for _, r := range runs {
		var got string
		if err := e.su.QueryRow(e.ctx, `SELECT payload::text FROM ql3.run_events WHERE run_id = $1 AND type = 'run.succeeded'`,
			r.run).Scan(&got); err != nil || got != `{"to": "succeeded", "from": "running", "exitCode": 0, "attemptId": "`+r.attempt.String()+`", "attemptNumber": 1}` {
			t.Errorf("succeeded payload %s (%v)", got, err)
		}
		if n := e.scalar(`SELECT count(*) FROM ql3.runs r JOIN ql3.attempts a ON a.run_id = r.run_id
			JOIN ql3.run_leases l ON l.attempt_id = a.attempt_id AND l.status = 'completed'
			WHERE r.run_id = $1 AND r.status = 'succeeded' AND a.status = 'succeeded' AND a.completion_digest IS NOT NULL
				AND r.started_at_ms IS NOT NULL AND r.finished_at_ms >= r.started_at_ms
				AND a.started_at_ms IS NOT NULL AND a.finished_at_ms >= a.started_at_ms`, r.run); n != 1 {
			t.Errorf("run %s: the ride's durable facts are incomplete", r.run)
		}
	}
	// The repeated batch: completions are duplicates; the running acks of
	// ended attempts are refused (the completion's answer is the one that
	// counts), nothing is written.
	events := e.scalar(`SELECT count(*) FROM ql3.run_events`)
	a, err = e.d.LeaseBatch(e.ctx, w.p, finish)
	if err != nil {
		t.Fatal(err)
	}
	for i := range finish.Acks {
		if o := a.Completions[i]; o.Error != nil || o.Receipt.Disposition != protocol.Duplicate {
			t.Errorf("repeated completion %d: %+v %+v", i, o.Error, o.Receipt)
		}
		if o := a.Acks[i]; o.Error == nil || o.Error.Code != errs.Conflict {
			t.Errorf("repeated running ack %d of an ended attempt: %+v, want a conflict", i, o)
		}
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_events`); n != events {
		t.Errorf("the repeated batch wrote %d events", n-events)
	}
}

// TestLeaseBatchItemsKeepTheirOwnFence: one item with a wrong token is
// refused alone (conflict), the others are written; a cancel intent
// answers that item's starting ack with cancel through its full path.
func TestLeaseBatchItemsKeepTheirOwnFence(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	var runs []seededRun
	for range 3 {
		runs = append(runs, e.queue(rev, 0))
	}
	w := e.worker(linuxCaps(), 3)
	req, tokens := w.batchReq(t, 3)
	offers, _, err := e.d.PullBatch(e.ctx, w.p, req)
	if err != nil || len(offers) != 3 {
		t.Fatalf("pull batch: %d offers, %v", len(offers), err)
	}
	e.exec(`UPDATE ql3.runs SET cancel_requested_at_ms = 1, cancel_reason = 'user' WHERE run_id = $1`, offers[2].RunID)
	b := protocol.LeaseBatch{V: protocol.Version}
	for i, o := range offers {
		tok := tokens[o.OfferID]
		if i == 1 {
			tok = newToken(t) // not this lease's token
		}
		b.Acks = append(b.Acks, protocol.Ack{V: protocol.Version, LeaseRef: o.Lease(tok), Phase: protocol.AckStarting})
	}
	a, err := e.d.LeaseBatch(e.ctx, w.p, b)
	if err != nil {
		t.Fatal(err)
	}
	if o := a.Acks[0]; o.Error != nil || o.Control.Action != protocol.LeaseExtend {
		t.Errorf("item 0: %+v %+v, want extend", o.Error, o.Control)
	}
	if o := a.Acks[1]; o.Error == nil || o.Error.Code != errs.Conflict {
		t.Errorf("item 1 (wrong token): %+v, want conflict", o)
	}
	if o := a.Acks[2]; o.Error != nil || o.Control.Action != protocol.LeaseCancel {
		t.Errorf("item 2 (cancel intent): %+v %+v, want cancel", o.Error, o.Control)
	}
	for i, wantAttempt := range []string{"starting", "claimed", "claimed"} {
		if _, as := e.status(runs[i].run); as != wantAttempt {
			t.Errorf("run %d attempt %s, want %s", i, as, wantAttempt)
		}
	}
}

// TestRideFallsBackInOrder: a running ack and a completion that cannot ride
// (a cancel intent arrived after the start barrier) take their own full
// paths, the ack first: it answers cancel, and the completion is recorded
// with the intent winning, exactly as two single requests.
func TestRideFallsBackInOrder(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0)
	h := e.take(e.worker(linuxCaps(), 1))
	e.mustAck(h, protocol.AckStarting)
	e.exec(`UPDATE ql3.runs SET cancel_requested_at_ms = 1, cancel_reason = 'user' WHERE run_id = $1`, r.run)
	b := protocol.LeaseBatch{V: protocol.Version,
		Acks:        []protocol.Ack{{V: protocol.Version, LeaseRef: h.ref(), Phase: protocol.AckRunning}},
		Completions: []protocol.Completion{succeeded(h, 0, 0)}}
	a, err := e.d.LeaseBatch(e.ctx, h.w.p, b)
	if err != nil {
		t.Fatal(err)
	}
	if o := a.Acks[0]; o.Error != nil || o.Control.Action != protocol.LeaseCancel {
		t.Errorf("running ack: %+v %+v, want cancel", o.Error, o.Control)
	}
	if o := a.Completions[0]; o.Error != nil || o.Receipt.Disposition != protocol.Recorded {
		t.Errorf("completion: %+v %+v, want recorded", o.Error, o.Receipt)
	}
	if rs, as := e.status(r.run); rs != "cancelled" || as != "cancelled" {
		t.Errorf("run %s attempt %s, want cancelled (the intent wins)", rs, as)
	}
	if s := e.d.Stats(); s.Rides != 0 {
		t.Errorf("%d rides, want 0", s.Rides)
	}
}
