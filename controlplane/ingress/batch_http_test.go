package ingress_test

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// TestBatchRoutesOverTLS: two Runs through the batch envelopes of ADR 0058
// over the real listener and dispatcher: one batched pull claims both (and
// a repeated batch answers the same bytes), one lease batch carries the
// starting acks, one the running acks with the completions; a batch with a
// foreign token answers that item's conflict only. The batch routes log
// the same info lines as the single routes. Without a batch-capable
// dispatcher the routes answer 404 (the worker then uses the single ones).
func TestBatchRoutesOverTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{dispatch: true})
	e.queueRun()
	e.queueRun()
	w := e.worker("batcher")
	c := e.client(w.cert)
	st := e.open(c, w)
	req := protocol.OfferPullBatch{SessionID: st.SessionID, Generation: st.Generation}
	tokens := map[string]fence.LeaseToken{}
	for range 2 {
		tok, err := fence.NewLeaseToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id := uuid.New().String()
		req.Pulls = append(req.Pulls, protocol.OfferPullItem{OfferID: id, LeaseToken: tok})
		tokens[id] = tok
	}
	body := encodeOrFatal(t, req)
	first := e.must(c, protocol.PathOfferPullBatch, w.cred, body, http.StatusOK)
	again := e.must(c, protocol.PathOfferPullBatch, w.cred, body, http.StatusOK)
	if !bytes.Equal(first, again) {
		t.Errorf("a repeated batch is not byte-identical:\n%s\n%s", first, again)
	}
	offers, err := protocol.DecodeOfferBatch(first, req)
	if err != nil || len(offers) != 2 {
		t.Fatalf("offer batch: %d, %v", len(offers), err)
	}
	starting := protocol.LeaseBatch{}
	finish := protocol.LeaseBatch{}
	zero := 0
	for _, o := range offers {
		ref := o.Lease(tokens[o.OfferID])
		starting.Acks = append(starting.Acks, protocol.Ack{LeaseRef: ref, Phase: protocol.AckStarting})
		finish.Acks = append(finish.Acks, protocol.Ack{LeaseRef: ref, Phase: protocol.AckRunning})
		finish.Completions = append(finish.Completions, protocol.Completion{LeaseRef: ref, Status: run.AttemptSucceeded,
			ExitCode: &zero, FinishedAtMs: 1})
	}
	// The first starting ack with a token that is not its lease's: that
	// item alone is refused.
	bad := starting
	bad.Acks = append([]protocol.Ack(nil), starting.Acks...)
	bad.Acks[0].LeaseToken, _ = fence.NewLeaseToken(rand.Reader)
	a, err := protocol.DecodeLeaseBatchAnswer(e.must(c, protocol.PathLeaseBatch, w.cred, encodeOrFatal(t, bad), http.StatusOK), bad)
	if err != nil || a.Acks[0].Error == nil || a.Acks[0].Error.Code != errs.Conflict || a.Acks[1].Control == nil {
		t.Fatalf("foreign-token item: %+v %v", a, err)
	}
	for _, lb := range []protocol.LeaseBatch{starting, finish} {
		a, err := protocol.DecodeLeaseBatchAnswer(e.must(c, protocol.PathLeaseBatch, w.cred, encodeOrFatal(t, lb), http.StatusOK), lb)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range a.Acks {
			if o.Control == nil || o.Control.Action != protocol.LeaseExtend {
				t.Errorf("ack %d: %+v", i, o)
			}
		}
		for i, o := range a.Completions {
			if o.Receipt == nil || o.Receipt.Disposition != protocol.Recorded {
				t.Errorf("completion %d: %+v", i, o)
			}
		}
	}
	logs := e.log.String()
	for _, msg := range []string{`"msg":"run leased"`, `"msg":"attempt acknowledged"`, `"msg":"attempt completed"`} {
		if !bytes.Contains([]byte(logs), []byte(`"level":"INFO",`+msg)) {
			t.Errorf("server log lacks an info line %s", msg)
		}
	}
	// Nothing left: 204 with the pause headers.
	next := req
	next.Pulls = []protocol.OfferPullItem{{OfferID: uuid.New().String()}}
	next.Pulls[0].LeaseToken, _ = fence.NewLeaseToken(rand.Reader)
	r, _, err := e.post(c, protocol.PathOfferPullBatch, w.cred, encodeOrFatal(t, next))
	if err != nil || r.status != http.StatusNoContent || r.header.Get(protocol.HeaderRetryAfterMs) == "" {
		t.Fatalf("empty batch: %d %v %v", r.status, r.header, err)
	}

	// A dispatcher without the batch port: 404 on both routes.
	f := newEnv(t, envOptions{})
	fw := f.worker("single")
	fc := f.client(fw.cert)
	fst := f.open(fc, fw)
	req.SessionID, req.Generation = fst.SessionID, fst.Generation
	for path, b := range map[string][]byte{protocol.PathOfferPullBatch: encodeOrFatal(t, req), protocol.PathLeaseBatch: encodeOrFatal(t, starting)} {
		r, _, err := f.post(fc, path, fw.cred, b)
		if err != nil || r.status != http.StatusNotFound {
			t.Errorf("%s without a batch port: %d %s %v", path, r.status, r.body, err)
		}
	}
}
