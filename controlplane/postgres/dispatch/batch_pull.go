package dispatch

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

// Batched pulls (ADR 0058): the single pull's first round trip and
// placement, then one pipeline (one implicit transaction) of one checked
// claim statement per item up to the free capacity. A repeated batch, or a
// pipeline that claimed nothing, goes item by item through Pull.

// sqlClaimBatch is sqlClaimChecked whose replay condition covers the
// batch: $15 every offer id of the batch, $16 the lease ids this batch's
// statements insert.
var sqlClaimBatch = strings.Replace(sqlClaimChecked,
	"AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.session_id = $7::uuid AND l.offer_id = $9::text)",
	"AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.session_id = $7::uuid AND l.offer_id = ANY($15::text[])\n\t\t\tAND l.lease_id <> ALL($16::uuid[]))", 1)

// PullBatch implements controlplane.LeaseBatchPort.
func (d *Dispatcher) PullBatch(ctx context.Context, p controlplane.Principal, req protocol.OfferPullBatch) ([]*protocol.Offer, time.Duration, error) {
	if err := req.Validate(); err != nil {
		return nil, 0, err
	}
	workerID, err := parseID("workerId", p.WorkerID)
	if err != nil {
		return nil, 0, err
	}
	sessionID, err := parseID("sessionId", req.SessionID)
	if err != nil {
		return nil, 0, err
	}
	d.stats.batchPulls.Add(1)
	offers, err := d.pullBatch(ctx, p, workerID, sessionID, req)
	if err != nil {
		return nil, 0, err
	}
	if len(offers) == 0 {
		d.stats.empty.Add(1)
		return nil, d.opts.IdleRetryAfter, nil
	}
	return offers, 0, nil
}

func (d *Dispatcher) pullBatch(ctx context.Context, p controlplane.Principal, workerID, sessionID uuid.UUID,
	req protocol.OfferPullBatch) ([]*protocol.Offer, error) {
	first := req.Request(0)
	digest := first.LeaseToken.Digest()
	s, err := d.readPullSession(ctx, sessionID, first.OfferID, digest)
	if err != nil {
		return nil, err
	}
	if err := s.check(workerID, req.Generation); err != nil {
		return nil, err
	}
	if s.replay != nil {
		return d.pullEach(ctx, p, req)
	}
	if s.tokenReused {
		return nil, errs.E(errs.Conflict, "pulls[0].leaseToken", "this lease token is bound to another offer")
	}
	if !s.hasFreeSlot() {
		return nil, nil
	}
	w, err := d.placedWalk(ctx, s)
	if err != nil || w == nil {
		return nil, err
	}
	n := min(int64(len(req.Pulls)), s.capacity-s.liveLeases)
	offers, err := d.claimBatch(ctx, w.placed, workerID, sessionID, req, int(n))
	if err != nil || len(offers) > 0 {
		return offers, err
	}
	d.stats.rereads.Add(1)
	return d.pullEach(ctx, p, req)
}

// pullEach answers the batch item by item through Pull (replays, and
// pipelines that claimed nothing).
func (d *Dispatcher) pullEach(ctx context.Context, p controlplane.Principal, req protocol.OfferPullBatch) ([]*protocol.Offer, error) {
	var out []*protocol.Offer
	for i := range req.Pulls {
		o, _, err := d.Pull(ctx, p, req.Request(i))
		if err != nil {
			if len(out) > 0 && errs.Code(err) != errs.Internal && errs.Code(err) != errs.Unavailable {
				// The items before were answered: a later item's refusal
				// ends the batch there (the worker drops its token).
				return out, nil
			}
			return nil, err
		}
		if o == nil {
			break // nothing runnable for the rest either
		}
		out = append(out, o)
	}
	return out, nil
}

// claimBatch runs n claim statements (one per item, in order) in one
// pipeline after the session's exclusive lock: one implicit transaction.
func (d *Dispatcher) claimBatch(ctx context.Context, placed map[uuid.UUID]placedRevision, workerID, sessionID uuid.UUID,
	req protocol.OfferPullBatch, n int) ([]*protocol.Offer, error) {
	offerIDs := make([]string, len(req.Pulls))
	for i := range req.Pulls {
		offerIDs[i] = req.Pulls[i].OfferID
	}
	// Concurrent batches hold the rows they claim until they commit: the
	// window reaches past them.
	window := int32(d.opts.PullPages*d.opts.PullPageRows + 4*n)
	calls := make([]*claimCall, n)
	leaseIDs := make([]uuid.UUID, n)
	for i := range n {
		r := req.Request(i)
		c, err := d.prepareClaim(placed, workerID, sessionID, r, r.LeaseToken.Digest(), window)
		if err != nil {
			return nil, err
		}
		calls[i], leaseIDs[i] = c, c.args[9].(uuid.UUID)
	}
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		b := &pgx.Batch{}
		b.Queue(postgres.PlanSettingsSQL)
		b.Queue(postgres.SQLLockExclusive, postgres.LockClassSession, postgres.LockObjectKey(sessionID))
		for _, c := range calls {
			*c = claimCall{args: c.args, req: c.req, digest: c.digest, f: offerFacts{workerID: workerID, sessionID: sessionID}}
			b.Queue(sqlClaimBatch, append(c.args[:14:14], offerIDs, leaseIDs)...)
		}
		br := tx.SendBatch(ctx, b)
		for range 2 {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return err
			}
		}
		for _, c := range calls {
			if err := c.scan(br.QueryRow()); err != nil {
				_ = br.Close()
				return err
			}
		}
		return br.Close()
	})
	d.stats.claimStatements.Add(int64(n))
	if err != nil {
		return nil, postgres.Errorf(err, "postgres: batch claim")
	}
	var out []*protocol.Offer
	for _, c := range calls {
		o, err := d.finishClaim(c, placed)
		if err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, o)
		}
	}
	d.stats.batchOffers.Add(int64(len(out)))
	return out, nil
}
