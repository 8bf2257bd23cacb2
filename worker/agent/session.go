package agent

import (
	"context"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

// sessionStep opens a session when none is live and the journal is
// settled, and sends the heartbeat when it is due.
func (a *Agent) sessionStep(ctx context.Context) {
	now := a.cfg.Clock.Now()
	// The session is given up as early as its attempts are fenced: the
	// authority releases its leases when the session lease passes.
	if a.sess != nil && !a.sess.deadline.IsZero() && !now.Before(a.sess.deadline.Add(-a.cfg.FenceMargin-a.cfg.KillGrace)) {
		a.sessionLost("lease_expired", "no heartbeat was answered before the session lease ran out")
	}
	if a.sess == nil {
		if !a.draining && a.settledForSession() && !now.Before(a.sessNotBefore) {
			a.openSession(ctx)
		}
		return
	}
	if !now.Before(a.sess.nextBeat) {
		a.heartbeat(ctx)
	}
}

// settledForSession: a new session is opened only once nothing of an
// earlier one still runs and no pull is pending (QL3-0122).
func (a *Agent) settledForSession() bool {
	return a.pending == nil && a.liveProcesses() == 0
}

func (a *Agent) openSession(ctx context.Context) {
	credID, err := a.credID()
	if err != nil {
		a.sessionRetry("identity unusable", err)
		return
	}
	body, err := protocol.SessionOpen{
		AgentVersion: a.cfg.AgentVersion, CredentialID: credID,
		Capacity: a.cfg.Capacity, Capabilities: a.cfg.Capabilities,
	}.Encode()
	if err != nil {
		a.sessionRetry("session open does not encode", err)
		return
	}
	resp, sent, err := a.post(ctx, protocol.PathSessionOpen, body, protocol.MaxSessionState)
	if err != nil {
		a.sessionRetry("session open failed", err)
		return
	}
	st, err := protocol.DecodeSessionState(resp.Body)
	if err != nil || st.Status != protocol.SessionOnline {
		a.sessionRetry("session open answer refused", err)
		return
	}
	interval := time.Duration(st.HeartbeatIntervalMs) * time.Millisecond
	a.sess = &session{
		id: st.SessionID, gen: st.Generation, status: st.Status, interval: interval,
		deadline: sent.Add(remaining(resp.Header, st.LeaseExpiresAtMs, 2*interval)),
	}
	a.sess.nextBeat = a.nextBeatAt(a.cfg.Clock.Now(), a.sess.interval)
	a.sessFailures = 0
	a.lastGeneration = st.Generation
	a.pullNotBefore = time.Time{}
	a.log.Info("session open", "session", st.SessionID, "generation", st.Generation, "capacity", a.cfg.Capacity)
}

func (a *Agent) sessionRetry(msg string, err error) {
	a.sessFailures++
	wait := fullJitter(a.cfg.Rand, a.sessFailures, time.Second, PullBackoffCap)
	a.sessNotBefore = a.cfg.Clock.Now().Add(wait)
	if err != nil {
		a.log.Warn(msg, "err", err, "retryIn", wait.String())
	} else {
		a.log.Warn(msg, "retryIn", wait.String())
	}
}

// heldAttemptIDs lists the attempts whose lease this session holds and
// still needs: everything not yet settled, by arrival.
func (a *Agent) heldAttemptIDs() []string {
	var ids []string
	seen := map[string]bool{}
	for _, at := range a.sortedAttempts() {
		if !at.ofSession(a.sess) || at.settling() || seen[at.offer.AttemptID] {
			continue
		}
		seen[at.offer.AttemptID] = true
		ids = append(ids, at.offer.AttemptID)
		if len(ids) == protocol.MaxCapacity {
			break
		}
	}
	return ids
}

func (a *Agent) heartbeat(ctx context.Context) {
	s := a.sess
	credID, err := a.credID()
	if err != nil {
		a.heartbeatFailed("identity unusable", err)
		return
	}
	ids := a.heldAttemptIDs()
	body, err := protocol.SessionHeartbeat{
		SessionID: s.id, Generation: s.gen, CapabilitiesDigest: a.capsDigest,
		CredentialID: credID, RunningAttemptIDs: ids,
	}.Encode()
	if err != nil {
		a.heartbeatFailed("heartbeat does not encode", err)
		return
	}
	resp, sent, err := a.post(ctx, protocol.PathSessionHeartbeat, body, protocol.MaxSessionState)
	if err != nil {
		switch client.StatusOf(err) {
		case http.StatusNotFound, http.StatusConflict, http.StatusGone:
			a.sessionLost("fence_lost", "the authority no longer knows this session")
		default:
			a.heartbeatFailed("heartbeat failed", err)
		}
		return
	}
	st, err := protocol.DecodeSessionState(resp.Body)
	if err != nil || st.SessionID != s.id || st.Generation != s.gen {
		a.heartbeatFailed("heartbeat answer refused", err)
		return
	}
	a.applyControls(st.Controls, resp.Header, sent)
	if st.Replaced || st.Status == protocol.SessionOffline {
		reason := "offline"
		if st.Replaced {
			reason = "replaced"
		}
		a.sessionLost(reason, "the authority ended this session")
		return
	}
	s.failures = 0
	s.status = st.Status
	s.interval = time.Duration(st.HeartbeatIntervalMs) * time.Millisecond
	s.deadline = sent.Add(remaining(resp.Header, st.LeaseExpiresAtMs, 2*s.interval))
	s.nextBeat = a.nextBeatAt(a.cfg.Clock.Now(), s.interval)
	// An attempt of this session the authority said nothing about keeps
	// its old deadline: no control, no renewal.
}

// nextBeatAt is when the next heartbeat goes out: after wait, but never
// later than halfway to the moment this worker gives its session up
// (deadline − fence margin − kill grace), so one lost heartbeat can still
// be retried in time. The authority only requires its lease to be two
// heartbeat intervals; with this worker's margins a lease that short would
// otherwise be given up before the first heartbeat, and the worker would
// churn sessions. When that happens the worker says so once.
func (a *Agent) nextBeatAt(now time.Time, wait time.Duration) time.Time {
	s := a.sess
	next := now.Add(wait)
	giveUp := s.deadline.Add(-a.cfg.FenceMargin - a.cfg.KillGrace)
	half := now.Add(max(0, giveUp.Sub(now)/2))
	if !half.Before(next) {
		return next
	}
	if !a.shortLeaseWarned {
		a.shortLeaseWarned = true
		a.log.Warn("session lease is short for this worker's fence margin and kill grace; heartbeating early",
			"intervalMs", s.interval.Milliseconds(), "everyMs", half.Sub(now).Milliseconds(),
			"fenceMarginMs", a.cfg.FenceMargin.Milliseconds(), "killGraceMs", a.cfg.KillGrace.Milliseconds())
	}
	return half
}

func (a *Agent) heartbeatFailed(msg string, err error) {
	s := a.sess
	s.failures++
	wait := min(s.interval, fullJitter(a.cfg.Rand, s.failures, time.Second, s.interval))
	s.nextBeat = a.nextBeatAt(a.cfg.Clock.Now(), wait)
	a.log.Warn(msg, "err", err, "failures", s.failures)
}

// applyControls acts on the authority's word per attempt.
func (a *Agent) applyControls(controls []protocol.LeaseControl, h http.Header, sent time.Time) {
	for _, c := range controls {
		for _, at := range a.attempts {
			if at.offer.AttemptID != c.AttemptID || !at.ofSession(a.sess) {
				continue
			}
			a.applyControl(at, c, h, sent)
		}
	}
}

func (a *Agent) applyControl(at *attempt, c protocol.LeaseControl, h http.Header, sent time.Time) {
	switch c.Action {
	case protocol.LeaseExtend:
		if c.LeaseGeneration != 0 && c.LeaseGeneration != at.offer.LeaseGeneration {
			return
		}
		at.deadline = sent.Add(remaining(h, c.LeaseExpiresAtMs, 2*a.cfg.Heartbeat))
		a.armFence(at)
	case protocol.LeaseCancel:
		at.deadline = sent.Add(remaining(h, c.LeaseExpiresAtMs, 2*a.cfg.Heartbeat))
		a.armFence(at)
		if at.proc != nil && !at.cancelled {
			at.cancelled = true
			a.log.Info("cancel requested by the authority", "attempt", at.offer.AttemptID, "graceMs", c.CancelGraceMs)
			at.proc.Stop(StopCancel)
			// The executor's grace is the longest a cancel waits; a shorter
			// one from the authority SIGKILLs earlier.
			if grace := time.Duration(c.CancelGraceMs) * time.Millisecond; grace < a.cfg.KillGrace {
				a.fence.killAt(at.e.OfferID, a.cfg.Clock.Now().Add(grace), at.proc)
			}
		} else if at.proc == nil && at.e.State == journal.Accepted {
			at.cancelled = true
		}
	case protocol.LeaseRevoke:
		if at.e.State == journal.Finished {
			return // already ended; its completion is still delivered (late or refused)
		}
		a.fenceAttempt(at, "revoked")
	}
}

// sessionLost ends the local view of the session: no more pulls under it,
// its running processes are stopped (their leases are gone or going), and
// a new session is opened once the journal is settled.
func (a *Agent) sessionLost(reason, msg string) {
	if a.sess == nil {
		return
	}
	old := a.sess
	a.sess = nil
	a.sessFailures = 0
	a.sessNotBefore = a.cfg.Clock.Now()
	a.log.Warn("session lost; stopping its work, a new session opens when settled",
		"session", old.id, "generation", old.gen, "reason", reason, "detail", msg)
	for _, at := range a.attempts {
		if at.offer.SessionID == old.id && at.offer.Generation == old.gen && at.alive() {
			a.fenceAttempt(at, "session_"+reason)
		}
	}
}

// transition asks for draining or offline; true once the authority shows
// that status (or the session is gone, which is as final).
func (a *Agent) transition(ctx context.Context, to protocol.SessionStatus) bool {
	now := a.cfg.Clock.Now()
	if now.Before(a.transitionAfter) {
		return false
	}
	s := a.sess
	body, err := protocol.SessionTransition{SessionID: s.id, Generation: s.gen, To: to}.Encode()
	if err != nil {
		a.log.Error("transition does not encode", "err", err)
		return false
	}
	resp, _, err := a.post(ctx, protocol.PathSessionTransition, body, protocol.MaxSessionState)
	if err == nil {
		st, derr := protocol.DecodeSessionState(resp.Body)
		if derr == nil && (st.Status == to || st.Status == protocol.SessionOffline) {
			a.transitionFails = 0
			s.status = st.Status
			a.log.Info("session transition", "to", st.Status, "session", s.id, "generation", s.gen)
			return true
		}
		err = derr
	}
	switch client.StatusOf(err) {
	case http.StatusNotFound, http.StatusConflict, http.StatusGone:
		a.sessionLost("fence_lost", "the session is gone; nothing left to transition")
		return true
	}
	// A 503 or an unknown outcome is never taken as done (ADR-0235 §3).
	a.transitionFails++
	wait := fullJitter(a.cfg.Rand, a.transitionFails, time.Second, PullBackoffCap)
	a.transitionAfter = now.Add(wait)
	a.log.Warn("session transition not confirmed; retrying", "to", to, "err", err, "retryIn", wait.String())
	return false
}

// drainStep moves a draining worker to offline: draining first, the drain
// deadline fences what still runs, and offline only once every record is
// settled.
func (a *Agent) drainStep(ctx context.Context) error {
	if !a.draining {
		return nil
	}
	now := a.cfg.Clock.Now()
	if !a.drainFenced && !now.Before(a.drainDeadline) {
		a.drainFenced = true
		for _, at := range a.attempts {
			if at.alive() {
				a.fenceAttempt(at, "drain_deadline")
			}
		}
	}
	if a.sess != nil && a.sess.status == protocol.SessionOnline {
		if !a.transition(ctx, protocol.SessionDraining) {
			return nil
		}
	}
	if len(a.attempts) > 0 || a.pending != nil {
		return nil
	}
	if a.sess == nil {
		a.offline = true // nothing to transition: the session already ended
		return nil
	}
	if a.transition(ctx, protocol.SessionOffline) {
		a.offline = true
	}
	return nil
}
