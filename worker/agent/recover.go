package agent

import (
	"context"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/journal"
)

// recover loads the journal after a start (ADR 0018): a launching or
// started record is never spawned again — its marked survivors of this
// boot are terminated and the record dropped, the lease left to lapse;
// finished records are still delivered (logs, then completion); accepted
// records belonged to the previous process's session and are dropped
// unspawned; the pending pull is resent unchanged until a definite answer.
func (a *Agent) recover(ctx context.Context) error {
	p, err := a.j.Pending()
	if err != nil {
		return jerr(err)
	}
	a.pending = p
	entries, bad, err := a.j.Entries()
	if err != nil {
		return jerr(err)
	}
	for _, id := range bad {
		a.log.Error("unreadable inbox entry moved aside", "offer", id)
	}
	for _, e := range entries {
		offer, derr := protocol.DecodeOffer(e.Offer)
		if derr != nil {
			a.log.Error("journaled offer no longer decodes; dropped", "offer", e.OfferID, "err", derr)
			if err := a.j.DropEntry(e.OfferID); err != nil {
				return jerr(err)
			}
			continue
		}
		at := &attempt{e: e, offer: offer}
		switch e.State {
		case journal.Accepted:
			a.log.Info("offer of the previous process never started; dropped", "attempt", offer.AttemptID)
			if err := a.j.DropEntry(e.OfferID); err != nil {
				return jerr(err)
			}
			continue
		case journal.Launching, journal.Started, journal.Fenced:
			// Never spawned again. Survivors from another boot cannot exist.
			if e.BootID != "" && e.BootID != a.run.BootID() {
				e.Process = ""
			}
			at.e.State, at.e.FenceReason = journal.Fenced, "restart_"+string(e.State)
			if e.State != journal.Fenced {
				if err := a.j.PutEntry(at.e); err != nil {
					return jerr(err)
				}
			}
			a.log.Warn("attempt interrupted by a restart; ending its survivors, its lease lapses", "attempt", offer.AttemptID)
		case journal.Finished:
			sp, err := openSpool(a.j.SpoolPath(e.OfferID), a.cfg.LogBytes, nil)
			if err != nil {
				return jerr(err)
			}
			at.sp = sp
		}
		a.addAttempt(at)
	}
	return nil
}
