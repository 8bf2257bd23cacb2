package agent

import (
	"context"
	"crypto/rand"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

// freeSlots is the capacity not taken by attempts that hold a lease on the
// authority or a process here. A started or finished attempt holds its
// lease until the completion's receipt, whether or not its process still
// runs: the authority counts it against the session's capacity until then,
// so pulling for its slot earlier only earns a 204 and an idle pause
// (ADR 0032).
func (a *Agent) freeSlots() int {
	used := 0
	for _, at := range a.attempts {
		switch at.e.State {
		case journal.Accepted, journal.Launching, journal.Started, journal.Finished:
			used++
		case journal.Fenced:
			if at.alive() || at.proc == nil {
				used++
			}
		}
	}
	return a.cfg.Capacity - used
}

// pullStep resolves the pending pull or starts a new one (ADR 0018): the
// record is written before the request and the identical request is sent
// until a definite answer, at most MaxPullTries times.
func (a *Agent) pullStep(ctx context.Context) error {
	now := a.cfg.Clock.Now()
	if a.pending != nil && a.draining {
		// Stop pulling: whatever that claim was, its lease lapses unstarted
		// and the run is offered again.
		if err := a.j.ClearPending(); err != nil {
			return jerr(err)
		}
		a.pending = nil
	}
	if now.Before(a.pullNotBefore) {
		return nil
	}
	if a.pending == nil {
		if a.draining || a.sess == nil || a.sess.status != protocol.SessionOnline ||
			a.freeSlots() < 1 || len(a.attempts) >= a.j.InboxMax() {
			return nil
		}
		p, err := a.newPending()
		if err != nil {
			a.log.Error("no lease token (entropy?)", "err", err)
			a.pullNotBefore = now.Add(a.cfg.Cadence)
			return nil
		}
		if err := a.j.PutPending(p); err != nil {
			return jerr(err)
		}
		a.pending = &p
	}
	return a.sendPending(ctx)
}

func (a *Agent) newPending() (journal.Pending, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return journal.Pending{}, err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	tok, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		return journal.Pending{}, err
	}
	return journal.Pending{OfferID: fence.FormatUUID(u), LeaseToken: tok,
		SessionID: a.sess.id, Generation: a.sess.gen}, nil
}

func (a *Agent) sendPending(ctx context.Context) error {
	p := a.pending
	req := protocol.OfferPullRequest{SessionID: p.SessionID, Generation: p.Generation,
		OfferID: p.OfferID, LeaseToken: p.LeaseToken}
	body, err := req.Encode()
	if err != nil {
		a.log.Error("pending pull does not encode; dropped", "err", err)
		return a.clearPending()
	}
	resp, sent, err := a.post(ctx, protocol.PathOfferPull, body, protocol.MaxOfferBodyBytes)
	now := a.cfg.Clock.Now()
	if err != nil {
		if client.IsUnknown(err) {
			p.Tries++
			if p.Tries >= MaxPullTries {
				a.log.Warn("pending pull dropped after its last try; a claimed lease lapses unstarted", "tries", p.Tries)
				a.pullFailures++
				a.pullNotBefore = now.Add(fullJitter(a.cfg.Rand, a.pullFailures, pullBackoffBase, PullBackoffCap))
				return a.clearPending()
			}
			if err := a.j.PutPending(*p); err != nil {
				return jerr(err)
			}
			a.pullNotBefore = now.Add(fullJitter(a.cfg.Rand, p.Tries, pullBackoffBase, PullBackoffCap))
			a.log.Debug("pull outcome unknown; the same request will be retried", "tries", p.Tries, "err", err)
			return nil
		}
		// A definite refusal: nothing was claimed for this request.
		a.pullFailures++
		a.pullNotBefore = now.Add(fullJitter(a.cfg.Rand, a.pullFailures, pullBackoffBase, PullBackoffCap))
		a.log.Warn("pull refused", "err", err)
		switch client.StatusOf(err) {
		case http.StatusNotFound, http.StatusConflict, http.StatusGone:
			if a.sess != nil && a.sess.id == p.SessionID && a.sess.gen == p.Generation {
				a.sess.nextBeat = now // let the heartbeat find out what happened to the session
			}
		}
		return a.clearPending()
	}
	if resp.Status == http.StatusNoContent {
		a.pullFailures = 0
		pause := a.emptyPullPause(resp.Header)
		spread := pullSpread(pause, a.cfg.Cadence)
		wait := pause + fullJitter(a.cfg.Rand, 0, spread, spread)
		a.pullNotBefore = now.Add(wait)
		a.log.Debug("nothing to run; next pull paced by the authority", "pauseMs", pause.Milliseconds(), "waitMs", wait.Milliseconds())
		return a.clearPending()
	}
	offer, err := protocol.DecodeOffer(resp.Body)
	if err == nil {
		err = offer.AnswersPull(req)
	}
	if err != nil {
		a.pullFailures++
		a.pullNotBefore = now.Add(fullJitter(a.cfg.Rand, a.pullFailures, pullBackoffBase, PullBackoffCap))
		a.log.Error("offer refused: not a valid answer to this pull; it is not run", "err", err)
		return a.clearPending()
	}
	a.pullFailures = 0
	if at, ok := a.attempts[offer.OfferID]; ok {
		// A replay after a crash between the inbox write and the clear.
		if at.offer.AttemptID != offer.AttemptID || at.offer.LeaseGeneration != offer.LeaseGeneration {
			a.log.Error("replayed offer differs from the journaled one; keeping the journal", "offer", offer.OfferID)
		}
		return a.clearPending()
	}
	kept, err := journalOffer(offer, resp.Body) // never a value on disk (envs.go)
	if err != nil {
		a.log.Error("offer does not re-encode without its env; it is not run", "offer", offer.OfferID, "err", err)
		return a.clearPending()
	}
	e := journal.Entry{OfferID: offer.OfferID, Offer: kept, LeaseToken: p.LeaseToken, State: journal.Accepted}
	if err := a.j.PutEntry(e); err != nil {
		if err == journal.ErrInboxFull {
			a.log.Error("inbox full; the offer is not run and its lease lapses", "offer", offer.OfferID)
			return a.clearPending()
		}
		return jerr(err)
	}
	at := &attempt{e: e, offer: offer,
		deadline: sent.Add(remaining(resp.Header, offer.LeaseExpiresAtMs, 2*a.cfg.Heartbeat))}
	a.addAttempt(at)
	a.log.Info("offer accepted", "attempt", offer.AttemptID, "run", offer.RunID, "leaseGeneration", offer.LeaseGeneration)
	// Next pass at once, not a cadence later: it starts this attempt and,
	// while slots are free, pulls again (pullNotBefore was not moved), so
	// a burst of due Runs fills the slots back to back.
	a.poke()
	return a.clearPending()
}

// Pacing of empty pulls (ADR 0030). The authority says when work will next
// appear: Ql3-Retry-After-Ms, in milliseconds, is followed as given (its
// floor, protocol.MinRetryAfterMs, bounds the pull rate; the worker's
// cadence is not a floor, or a node would come back up to 500 ms after the
// Run was queued). Without it, Retry-After (whole seconds) is the fallback
// and the cadence stays its floor, as before.
const (
	// minPullSpread and maxPullSpread bound the jitter added to a pause.
	// A quarter of the pause spreads the fleet that was told the same
	// instant: 1,000 sessions paced to an every-second occurrence arrive
	// over ~250 ms (4 pulls/ms, a few in flight at a ≤ 10 ms idle pull,
	// far below the ingress's 256 slots) instead of in one millisecond,
	// and a session's own latency grows by at most 250 ms.
	minPullSpread = 20 * time.Millisecond
	maxPullSpread = 250 * time.Millisecond
)

// emptyPullPause is the pause a 204 asks for, before jitter.
func (a *Agent) emptyPullPause(h http.Header) time.Duration {
	ms, ok, err := protocol.ParseRetryAfterMs(h.Get(protocol.HeaderRetryAfterMs))
	if ok && err == nil {
		return min(time.Duration(ms)*time.Millisecond, maxIdlePause)
	}
	wait, err := protocol.ParseRetryAfter(h.Get(protocol.HeaderRetryAfter))
	if err != nil {
		wait = int64(a.cfg.Cadence / time.Millisecond)
	}
	return min(max(time.Duration(wait)*time.Millisecond, a.cfg.Cadence), maxIdlePause)
}

// pullSpread is the bound of the jitter added to a pause: a quarter of it,
// within [minPullSpread, maxPullSpread] and never more than the cadence.
func pullSpread(pause, cadence time.Duration) time.Duration {
	return min(max(pause/4, minPullSpread), maxPullSpread, cadence)
}

// loopWait is how long the loop sleeps after a pass: its cadence, or less
// when a paused pull comes due sooner, so a paced pull is sent on time
// rather than up to a cadence late.
func (a *Agent) loopWait() time.Duration {
	if until := a.pullNotBefore.Sub(a.cfg.Clock.Now()); until > 0 && until < a.cfg.Cadence {
		return until
	}
	return a.cfg.Cadence
}

func (a *Agent) clearPending() error {
	if err := a.j.ClearPending(); err != nil {
		return jerr(err)
	}
	a.pending = nil
	return nil
}
