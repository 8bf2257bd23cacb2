package ingress

import (
	"context"
	"net/http"
	"strconv"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/httpkit"
)

// The batch envelopes of ADR 0058: a batched pull and a lease batch. A
// dispatcher without controlplane.LeaseBatchPort answers 404, and a worker
// then uses the single routes.

func (s *Server) batchPort() (controlplane.LeaseBatchPort, error) {
	if s.cfg.Leases == nil {
		return nil, errs.E(errs.Unavailable, "", "no dispatcher is configured in this replica")
	}
	bp, ok := s.cfg.Leases.(controlplane.LeaseBatchPort)
	if !ok {
		return nil, errs.NotFoundf("this authority serves no batch routes")
	}
	return bp, nil
}

// pullBatch answers 200 with an OfferBatch or 204 with Retry-After, as pull.
func (s *Server) pullBatch(ctx context.Context, w http.ResponseWriter, r *http.Request, p controlplane.Principal, body []byte) {
	req, err := protocol.DecodeOfferPullBatch(body)
	var bp controlplane.LeaseBatchPort
	if err == nil {
		bp, err = s.batchPort()
	}
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return
	}
	offers, retryAfter, err := bp.PullBatch(ctx, p, req)
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return
	}
	if len(offers) == 0 {
		pauseMs := s.pullPauseMs(retryAfter)
		w.Header().Set(protocol.HeaderRetryAfter, strconv.FormatInt(protocol.RetryAfterSeconds(pauseMs), 10))
		w.Header().Set(protocol.HeaderRetryAfterMs, strconv.FormatInt(pauseMs, 10))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	raws := make([][]byte, len(offers))
	for i, o := range offers {
		if raws[i], err = o.Encode(); err != nil {
			s.fail(ctx, w, r, p.WorkerID, errs.E(errs.Internal, "", "encode offer: %v", err))
			return
		}
		s.log.Info("run leased", "run", o.RunID, "attemptNumber", o.AttemptNumber, "worker", p.WorkerID)
	}
	raw, err := protocol.EncodeOfferBatch(raws)
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, errs.E(errs.Internal, "", "encode offer batch: %v", err))
		return
	}
	httpkit.WriteRaw(w, http.StatusOK, raw)
}

// leaseBatch answers a LeaseBatch item by item.
func (s *Server) leaseBatch(ctx context.Context, p controlplane.Principal, body []byte) ([]byte, error) {
	return call(ctx, body, protocol.DecodeLeaseBatch, func(ctx context.Context, b protocol.LeaseBatch) (protocol.LeaseBatchAnswer, error) {
		bp, err := s.batchPort()
		if err != nil {
			return protocol.LeaseBatchAnswer{}, err
		}
		a, err := bp.LeaseBatch(ctx, p, b)
		if err != nil {
			return a, err
		}
		// One info line per Run transition, as the single routes log them;
		// never the lease token.
		for i, o := range a.Acks {
			if o.Control != nil {
				s.log.Info("attempt acknowledged", "run", b.Acks[i].RunID, "attempt", b.Acks[i].AttemptID,
					"phase", string(b.Acks[i].Phase), "action", string(o.Control.Action), "worker", p.WorkerID)
			}
		}
		for i, o := range a.Completions {
			if o.Receipt != nil {
				c := b.Completions[i]
				s.log.Info("attempt completed", "run", c.RunID, "attempt", c.AttemptID, "status", string(c.Status),
					"class", string(c.ErrorClass), "disposition", string(o.Receipt.Disposition), "worker", p.WorkerID)
			}
		}
		return a, nil
	}, protocol.LeaseBatchAnswer.Encode)
}
