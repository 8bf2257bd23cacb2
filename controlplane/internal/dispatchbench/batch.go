package main

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// batchRound is what a batching worker (ADR 0058) does with no-op runs and
// n free slots: one batched pull; one lease batch with the starting acks
// (the start barrier is durable before anything would spawn); the
// processes end at once, so the running acks ride with the completions in
// one more lease batch. It returns the runs completed.
func (w *worker) batchRound(s *stack, n int) (int, error) {
	req := protocol.OfferPullBatch{SessionID: w.session.SessionID, Generation: w.session.Generation}
	tokens := map[string]fence.LeaseToken{}
	for range n {
		tok, err := fence.NewLeaseToken(rand.Reader)
		if err != nil {
			return 0, err
		}
		id := uuid.NewString()
		req.Pulls = append(req.Pulls, protocol.OfferPullItem{OfferID: id, LeaseToken: tok})
		tokens[id] = tok
	}
	body, err := req.Encode()
	if err != nil {
		return 0, err
	}
	raw, status, err := w.post(s, protocol.PathOfferPullBatch, body)
	switch {
	case err != nil:
		return 0, err
	case status == http.StatusNoContent:
		return 0, nil
	case status != http.StatusOK:
		return 0, fmt.Errorf("batched pull: %d %s", status, raw)
	}
	offers, err := protocol.DecodeOfferBatch(raw, req)
	if err != nil {
		return 0, err
	}
	var starting, finish protocol.LeaseBatch
	zero := 0
	for _, o := range offers {
		ref := o.Lease(tokens[o.OfferID])
		starting.Acks = append(starting.Acks, protocol.Ack{LeaseRef: ref, Phase: protocol.AckStarting})
		finish.Acks = append(finish.Acks, protocol.Ack{LeaseRef: ref, Phase: protocol.AckRunning})
		finish.Completions = append(finish.Completions, protocol.Completion{LeaseRef: ref, Status: run.AttemptSucceeded,
			ExitCode: &zero, FinishedAtMs: time.Now().UnixMilli()})
	}
	for _, lb := range []protocol.LeaseBatch{starting, finish} {
		body, err := lb.Encode()
		if err != nil {
			return 0, err
		}
		raw, status, err := w.post(s, protocol.PathLeaseBatch, body)
		if err != nil || status != http.StatusOK {
			return 0, fmt.Errorf("lease batch: %d %s %v", status, raw, err)
		}
		a, err := protocol.DecodeLeaseBatchAnswer(raw, lb)
		if err != nil {
			return 0, err
		}
		for i, o := range a.Acks {
			if o.Error != nil || o.Control.Action != protocol.LeaseExtend {
				return 0, fmt.Errorf("ack %d: %+v %+v", i, o.Error, o.Control)
			}
		}
		for i, o := range a.Completions {
			if o.Error != nil || o.Receipt.Disposition != protocol.Recorded {
				return 0, fmt.Errorf("completion %d: %+v %+v", i, o.Error, o.Receipt)
			}
		}
	}
	return len(offers), nil
}
