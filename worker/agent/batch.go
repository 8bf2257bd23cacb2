package agent

import (
	"context"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

// Lease batches (ADR 0058). Before the per-attempt steps of a pass, the
// acks and completions every attempt has ready travel in one request to
// /v1/leases/batch: the starting acks of accepted attempts (answered before
// anything spawns: the start barrier is unchanged), the running acks of
// started attempts, and the completions of finished ones whose log is
// uploaded — with their running ack when it has not been sent yet, so a
// short process's running transition rides its completion. Each item's
// answer is handled exactly as its own request's (ackAnswered,
// completionAnswered); the per-attempt steps then see the acks done and
// the delivered entries gone, and do the rest (spawn, uploads) as before.
//
// The batch route is tried once two items are ready at the same time; an
// authority that answers 404 (no batches) or refuses the envelope gets the
// single routes from then on. Once a batch has been answered, a started
// attempt's running ack waits for the next pass (so it can ride the
// completion) instead of going out right after the spawn.

type batchMode int8

const (
	batchUnknown batchMode = iota
	batchServed
	batchOff
)

type batchItem struct {
	at    *attempt
	phase protocol.AckPhase // "" for a completion
}

// leaseBatchStep sends what is ready as one lease batch.
func (a *Agent) leaseBatchStep(ctx context.Context) error {
	if a.batch == batchOff {
		return nil
	}
	now := a.cfg.Clock.Now()
	var acks, dones []batchItem
	for _, at := range a.sortedAttempts() {
		if now.Before(at.notBefore) {
			continue
		}
		if len(acks) == protocol.MaxBatchItems || len(dones) == protocol.MaxBatchItems {
			break // the rest go in the next pass (an attempt's items never split)
		}
		switch at.e.State {
		case journal.Accepted:
			if !at.e.StartAcked && a.startable(at, now) {
				acks = append(acks, batchItem{at, protocol.AckStarting})
			}
		case journal.Started:
			if !at.e.RunningAcked && at.fenced == "" && at.proc != nil {
				acks = append(acks, batchItem{at, protocol.AckRunning})
			}
		case journal.Finished:
			if at.sp == nil || !a.upload(ctx, at, true) {
				continue // the single path opens the spool of a never-spawned attempt and uploads
			}
			if !at.e.RunningAcked && at.proc != nil {
				acks = append(acks, batchItem{at, protocol.AckRunning})
			}
			dones = append(dones, batchItem{at: at})
		}
	}
	if n := len(acks) + len(dones); n == 0 || (n == 1 && a.batch != batchServed) {
		return nil
	}
	var b protocol.LeaseBatch
	for _, it := range acks {
		b.Acks = append(b.Acks, protocol.Ack{LeaseRef: it.at.offer.Lease(it.at.e.LeaseToken), Phase: it.phase})
	}
	for _, it := range dones {
		c, err := protocol.DecodeCompletion(it.at.e.Completion)
		if err != nil {
			return nil // the single path delivers (and reports) what does not decode
		}
		b.Completions = append(b.Completions, c)
	}
	body, err := b.Encode()
	if err != nil {
		return nil // too large or invalid: the single routes carry the items
	}
	resp, sent, err := a.post(ctx, protocol.PathLeaseBatch, body, protocol.MaxLeaseBatchAnswerBytes)
	if err != nil {
		if client.IsUnknown(err) {
			for _, it := range append(acks, dones...) {
				a.backoff(it.at)
			}
			return nil
		}
		a.batch = batchOff
		a.log.Info("the authority serves no lease batches; using the single routes", "err", err)
		return nil
	}
	ans, err := protocol.DecodeLeaseBatchAnswer(resp.Body, b)
	if err != nil {
		for _, it := range append(acks, dones...) {
			a.backoff(it.at)
		}
		return nil
	}
	a.batch = batchServed
	for i, it := range acks {
		var refused error
		var ctl protocol.LeaseControl
		if o := ans.Acks[i]; o.Error != nil {
			refused = o.Error.Err()
		} else {
			ctl = *o.Control
		}
		if it.at.e.State == journal.Finished && refused != nil {
			// A running ack sent with its completion: the completion's
			// answer is the attempt's (a repeated batch finds the attempt
			// ended and refuses the ack).
			continue
		}
		action, _ := a.ackAnswered(it.at, it.phase, ctl, refused, resp.Header, sent)
		if it.phase == protocol.AckStarting {
			if err := a.startAcked(it.at, action); err != nil {
				return err
			}
		}
	}
	for i, it := range dones {
		var r protocol.CompletionReceipt
		var refused error
		if o := ans.Completions[i]; o.Error != nil {
			refused = o.Error.Err()
		} else {
			r = *o.Receipt
		}
		if err := a.completionAnswered(it.at, r, refused); err != nil {
			return err
		}
	}
	return nil
}

// startable: an accepted attempt may still pass the start barrier (the
// checks startAttempt makes before its starting ack).
func (a *Agent) startable(at *attempt, now time.Time) bool {
	return !a.draining && at.ofSession(a.sess) &&
		(at.deadline.IsZero() || now.Before(at.deadline.Add(-a.cfg.FenceMargin)))
}

// deferRunningAck: the running ack of a just-spawned attempt waits for the
// next pass's batch (it may ride the completion) once batches are served.
func (a *Agent) deferRunningAck() bool { return a.batch == batchServed }
