package controlplane

import (
	"context"
	"time"

	"github.com/ql3/ql3/core/protocol"
)

// LeaseBatchPort serves the batch envelopes of ADR 0058
// (protocol.PathOfferPullBatch, protocol.PathLeaseBatch). A LeasePort that
// also implements it gets the batch routes; without it they answer 404 and
// a worker falls back to the single routes.
type LeaseBatchPort interface {
	// PullBatch claims up to len(req.Pulls) offers (never more than the
	// session's free capacity) in one transaction, in item order. Each
	// offer is the one Pull(req.Request(i)) would give, byte for byte on a
	// replay. No offer: the ingress answers 204 as for Pull.
	PullBatch(ctx context.Context, p Principal, req protocol.OfferPullBatch) (offers []*protocol.Offer, retryAfter time.Duration, err error)
	// LeaseBatch answers every ack, then every completion, each exactly as
	// Ack and Complete would; what can be written together is written in
	// one transaction. A refusal of one item (conflict, invalid, not found)
	// is that item's answer; a failure of the authority fails the batch.
	LeaseBatch(ctx context.Context, p Principal, b protocol.LeaseBatch) (protocol.LeaseBatchAnswer, error)
}
