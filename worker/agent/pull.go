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

// freeSlots is the capacity not taken by attempts that hold or will hold a
// process.
func (a *Agent) freeSlots() int {
	used := 0
	for _, at := range a.attempts {
		switch at.e.State {
		case journal.Accepted, journal.Launching:
			used++
		case journal.Started, journal.Fenced:
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
	resp, sent, err := a.post(ctx, protocol.PathOfferPull, body, protocol.MaxOfferBytes)
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
		wait, perr := protocol.ParseRetryAfter(resp.Header.Get(protocol.HeaderRetryAfter))
		if perr != nil {
			wait = int64(a.cfg.Cadence / time.Millisecond)
		}
		pause := max(time.Duration(wait)*time.Millisecond, a.cfg.Cadence)
		pause = min(pause, maxIdlePause) + fullJitter(a.cfg.Rand, 0, a.cfg.Cadence, a.cfg.Cadence)
		a.pullNotBefore = now.Add(pause)
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
	e := journal.Entry{OfferID: offer.OfferID, Offer: append([]byte(nil), resp.Body...),
		LeaseToken: p.LeaseToken, State: journal.Accepted}
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
	return a.clearPending()
}

func (a *Agent) clearPending() error {
	if err := a.j.ClearPending(); err != nil {
		return jerr(err)
	}
	a.pending = nil
	return nil
}
