package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

// attempt is one inbox entry in memory.
type attempt struct {
	e         journal.Entry
	offer     protocol.Offer
	proc      Process
	sp        *spool
	masked    *maskedOutput // env values masked on the way to sp (envs.go); nil: none
	deadline  time.Time     // local view of the lease expiry; zero = unknown
	cancelled bool          // the authority asked to cancel
	fenced    string        // why the worker stopped it itself ("" = not fenced)
	deferred  bool          // its running ack waits for a lease batch (batch.go)

	uploaded     int64
	eofDone      bool
	logsGaveUp   bool
	logRestarted bool
	failures     int
	notBefore    time.Time
	script       *scriptPrep // a script task's launch, once ready (scripts.go)
	notifyToken  string      // its sendNotify token (notify.go)
}

func (at *attempt) ofSession(s *session) bool {
	return s != nil && at.offer.SessionID == s.id && at.offer.Generation == s.gen
}

// alive: a spawned process that has not ended yet.
func (at *attempt) alive() bool {
	if at.proc == nil {
		return false
	}
	select {
	case <-at.proc.Done():
		return false
	default:
		return true
	}
}

// settling: stopped by the worker, waiting only for its process to go.
func (at *attempt) settling() bool { return at.e.State == journal.Fenced }

func (a *Agent) backoff(at *attempt) {
	at.failures++
	at.notBefore = a.cfg.Clock.Now().Add(fullJitter(a.cfg.Rand, at.failures, time.Second, PullBackoffCap))
}

// armFence (re)registers an attempt's fence time with the fencer: the lease
// minus the margin minus the kill grace, so the group is gone before the
// authority can hand the run to anyone else.
func (a *Agent) armFence(at *attempt) {
	if at.deadline.IsZero() || at.proc == nil || at.fenced != "" {
		return
	}
	at2 := at
	a.fence.set(at.e.OfferID, at.deadline.Add(-a.cfg.FenceMargin-a.cfg.KillGrace), at.proc, func() {
		a.log.Warn("lease not renewed in time; stopping the process group locally",
			"attempt", at2.offer.AttemptID, "run", at2.offer.RunID)
		if a.cfg.Hooks.Fenced != nil {
			a.cfg.Hooks.Fenced(at2.offer.AttemptID, "lease_lapsed")
		}
	})
}

// fenceAttempt stops an attempt on the worker's own authority and records
// it; no completion will be sent for it.
func (a *Agent) fenceAttempt(at *attempt, reason string) {
	if at.fenced != "" {
		return
	}
	at.fenced = reason
	a.fence.remove(at.e.OfferID)
	if at.proc != nil {
		at.proc.Stop(StopFence)
		a.log.Warn("process group stopped by the worker", "attempt", at.offer.AttemptID, "reason", reason)
	}
	if a.cfg.Hooks.Fenced != nil {
		a.cfg.Hooks.Fenced(at.offer.AttemptID, reason)
	}
}

// collectFenced takes the fencer's decisions into the attempts.
func (a *Agent) collectFenced() {
	for _, id := range a.fence.takeFired() {
		if at, ok := a.attempts[id]; ok && at.fenced == "" {
			at.fenced = "lease_lapsed"
		}
	}
}

// reap turns ended processes into Finished (completion journaled) or
// Fenced entries, and persists fences.
func (a *Agent) reap() error {
	for _, at := range a.sortedAttempts() {
		if at.fenced != "" && at.e.State != journal.Fenced && at.e.State != journal.Finished {
			at.e.State = journal.Fenced
			at.e.FenceReason = at.fenced
			if err := a.j.PutEntry(at.e); err != nil {
				return jerr(err)
			}
		}
		if at.proc == nil || at.e.State != journal.Started || at.alive() {
			continue
		}
		out := at.proc.Result()
		if out.Status == run.AttemptLost {
			at.e.State, at.e.FenceReason = journal.Fenced, "stopped"
			if err := a.j.PutEntry(at.e); err != nil {
				return jerr(err)
			}
			continue
		}
		maskedCount := at.masked.finish() // the held-back tail first
		at.sp.seal()                      // the tail (and the marker) behind the head: the process and its output are done
		size, trunc := at.sp.state()
		c := completionFor(at, out, size, trunc)
		c.MaskedCount = maskedCount
		if err := a.finish(at, c); err != nil {
			return err
		}
	}
	return nil
}

// finish journals the completion; the entry is kept until the receipt.
func (a *Agent) finish(at *attempt, c protocol.Completion) error {
	body, err := c.Encode()
	if err != nil {
		a.log.Error("completion does not encode; reporting an internal failure", "attempt", at.offer.AttemptID, "err", err)
		c = protocol.Completion{LeaseRef: c.LeaseRef, Status: run.AttemptFailed, ErrorClass: run.ErrorInternal,
			FinishedAtMs: max(1, c.FinishedAtMs), StdoutBytes: c.StdoutBytes, LogTruncated: c.LogTruncated}
		if body, err = c.Encode(); err != nil {
			return jerr(err)
		}
	}
	at.e.State = journal.Finished
	at.e.Completion = body
	at.failures, at.notBefore = 0, time.Time{}
	a.fence.remove(at.e.OfferID)
	return jerr(a.j.PutEntry(at.e))
}

// completionFor builds the completion of an ended process.
func completionFor(at *attempt, o Outcome, size int64, trunc bool) protocol.Completion {
	c := protocol.Completion{
		LeaseRef: at.offer.Lease(at.e.LeaseToken),
		Status:   o.Status, ErrorClass: o.ErrorClass, ExitCode: o.ExitCode, Signal: o.Signal,
		StartedAtMs: max(0, o.StartedAt.UnixMilli()), FinishedAtMs: max(1, o.FinishedAt.UnixMilli()),
		StdoutBytes: size, LogTruncated: trunc,
	}
	if c.StartedAtMs > c.FinishedAtMs {
		c.StartedAtMs = c.FinishedAtMs
	}
	if at.cancelled && o.Status != run.AttemptSucceeded && o.Status != run.AttemptTimedOut {
		c.Status, c.ErrorClass = run.AttemptCancelled, run.ErrorCancelledByUser
	}
	return c
}

// attemptSteps advances every inbox entry by what it needs next.
func (a *Agent) attemptSteps(ctx context.Context) error {
	now := a.cfg.Clock.Now()
	for _, at := range a.sortedAttempts() {
		if now.Before(at.notBefore) {
			continue
		}
		var err error
		switch at.e.State {
		case journal.Accepted:
			err = a.startAttempt(ctx, at)
		case journal.Started:
			if !at.e.RunningAcked && at.fenced == "" {
				a.ack(ctx, at, protocol.AckRunning)
			}
			if at.fenced == "" && at.sp != nil {
				a.upload(ctx, at, false)
			}
		case journal.Finished:
			err = a.deliver(ctx, at)
		case journal.Fenced:
			err = a.settleFenced(ctx, at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startAttempt passes the start barrier (Ack starting), then journals
// launching, spawns, and journals started.
func (a *Agent) startAttempt(ctx context.Context, at *attempt) error {
	now := a.cfg.Clock.Now()
	switch {
	case a.draining, !at.ofSession(a.sess):
		return a.drop(at, "not started: the session ended or the worker is draining")
	case !at.deadline.IsZero() && !now.Before(at.deadline.Add(-a.cfg.FenceMargin)):
		return a.drop(at, "not started: the offer's lease lapsed first")
	}
	if !a.prepareScript(ctx, at) {
		return nil // the tree is not here yet: the next pass tries again
	}
	if !at.e.StartAcked {
		ctl, ok := a.ack(ctx, at, protocol.AckStarting)
		if !ok {
			return nil
		}
		if err := a.startAcked(at, ctl); err != nil || !at.e.StartAcked {
			return err
		}
	}
	if at.cancelled {
		// Past the start barrier with a cancel intent: report it rather
		// than leave the attempt to be found lost.
		c := protocol.Completion{LeaseRef: at.offer.Lease(at.e.LeaseToken), Status: run.AttemptCancelled,
			ErrorClass: run.ErrorCancelledByUser, FinishedAtMs: max(1, now.UnixMilli())}
		return a.finish(at, c)
	}
	at.e.State = journal.Launching
	if err := a.j.PutEntry(at.e); err != nil {
		return jerr(err)
	}
	sp, err := openSpool(a.j.SpoolPath(at.e.OfferID), a.cfg.LogBytes, nil)
	if err != nil {
		return jerr(err)
	}
	at.sp = sp
	sp.truncate()
	var output io.Writer = sp
	if at.masked = newMaskedOutput(sp, at.offer); at.masked != nil {
		output = at.masked
	}
	procEnv, err := processEnv(at.offer)
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrNeverStarted, err)
	} else {
		var proc Process
		proc, err = a.startLaunch(at, Launch{
			RunID: at.offer.RunID, Attempt: at.offer.AttemptNumber, TaskID: at.offer.TaskID,
			TaskRevision: at.offer.TaskRevision, ScheduledFor: time.UnixMilli(at.offer.ScheduledForMs).UTC(),
			Spec: at.offer.Spec, Env: procEnv, Timeout: time.Duration(at.offer.TimeoutMs) * time.Millisecond, Output: output,
		})
		if err == nil {
			at.proc = proc
		}
	}
	if err != nil {
		if errors.Is(err, ErrNeverStarted) {
			a.log.Warn("process could not be started", "attempt", at.offer.AttemptID, "err", err)
			c := protocol.Completion{LeaseRef: at.offer.Lease(at.e.LeaseToken), Status: run.AttemptFailed,
				ErrorClass: run.ErrorExecutorStart, FinishedAtMs: max(1, a.cfg.Clock.Now().UnixMilli())}
			return a.finish(at, c)
		}
		// Ambiguous: a process may exist. Never spawn again; settle it
		// like a restart would.
		a.log.Error("spawn failed ambiguously; the attempt is abandoned", "attempt", at.offer.AttemptID, "err", err)
		at.e.State, at.e.FenceReason = journal.Fenced, "ambiguous_spawn"
		return jerr(a.j.PutEntry(at.e))
	}
	proc := at.proc
	at.e.State = journal.Started
	at.e.Process = proc.Identity()
	at.e.BootID = a.run.BootID()
	go func() { <-proc.Done(); a.poke() }()
	a.armFence(at)
	a.log.Info("attempt started", "attempt", at.offer.AttemptID, "run", at.offer.RunID, "number", at.offer.AttemptNumber)
	if err := a.j.PutEntry(at.e); err != nil {
		return jerr(err)
	}
	if a.deferRunningAck() {
		at.deferred = true
		a.poke() // the next pass's lease batch carries it (batch.go)
		return nil
	}
	a.ack(ctx, at, protocol.AckRunning)
	return nil
}

// startAcked applies the answer to a starting ack: revoke drops the
// attempt, cancel reports a cancelled start; otherwise the barrier is
// passed.
func (a *Agent) startAcked(at *attempt, ctl protocol.LeaseAction) error {
	switch ctl {
	case protocol.LeaseRevoke:
		return a.drop(at, "not started: the lease was revoked")
	case protocol.LeaseCancel:
		at.cancelled = true
	}
	at.e.StartAcked = true
	return nil
}

// ack sends one Ack; ok is false when the outcome is unknown (retry later).
// A definite refusal revokes the attempt.
func (a *Agent) ack(ctx context.Context, at *attempt, phase protocol.AckPhase) (protocol.LeaseAction, bool) {
	body, err := protocol.Ack{LeaseRef: at.offer.Lease(at.e.LeaseToken), Phase: phase}.Encode()
	if err != nil {
		a.log.Error("ack does not encode", "err", err)
		return protocol.LeaseRevoke, true
	}
	resp, sent, err := a.post(ctx, protocol.PathLeaseAck, body, protocol.DefaultBodyBytes)
	if err != nil {
		if client.IsUnknown(err) {
			a.backoff(at)
			return "", false
		}
		return a.ackAnswered(at, phase, protocol.LeaseControl{}, err, nil, sent)
	}
	ctl, err := protocol.DecodeLeaseControl(resp.Body)
	if err != nil || ctl.AttemptID != at.offer.AttemptID {
		a.backoff(at)
		return "", false
	}
	return a.ackAnswered(at, phase, ctl, nil, resp.Header, sent)
}

// ackAnswered applies an ack's definite answer: its control, or a refusal
// (the lease is not held: a refused running ack fences the attempt).
func (a *Agent) ackAnswered(at *attempt, phase protocol.AckPhase, ctl protocol.LeaseControl, refused error,
	h http.Header, sent time.Time) (protocol.LeaseAction, bool) {
	if refused != nil {
		a.log.Warn("ack refused; the lease is not held", "attempt", at.offer.AttemptID, "phase", phase, "err", refused)
		if phase == protocol.AckRunning {
			a.fenceAttempt(at, "ack_refused")
		}
		return protocol.LeaseRevoke, true
	}
	at.failures = 0
	if phase == protocol.AckRunning {
		at.e.RunningAcked = true
	}
	a.applyControl(at, ctl, h, sent)
	return ctl.Action, true
}

// drop forgets an entry that never spawned a process.
func (a *Agent) drop(at *attempt, why string) error {
	a.log.Info(why, "attempt", at.offer.AttemptID, "run", at.offer.RunID)
	if err := a.j.DropEntry(at.e.OfferID); err != nil {
		return jerr(err)
	}
	a.removeAttempt(at.e.OfferID)
	return nil
}

// settleFenced drops a fenced entry once its process group is gone.
func (a *Agent) settleFenced(ctx context.Context, at *attempt) error {
	if at.alive() {
		return nil
	}
	if at.proc == nil {
		// Restart recovery or an ambiguous spawn: end marked survivors.
		left, err := a.run.TerminateSurvivors(ctx, at.offer.RunID, at.offer.AttemptNumber, at.e.Process)
		if err != nil || left > 0 {
			a.log.Warn("survivors of an abandoned attempt are still alive", "attempt", at.offer.AttemptID, "left", left, "err", err)
			a.backoff(at)
			return nil
		}
	}
	a.log.Warn("attempt settled without a completion; its lease is left to lapse",
		"attempt", at.offer.AttemptID, "reason", at.e.FenceReason)
	if err := a.j.DropEntry(at.e.OfferID); err != nil {
		return jerr(err)
	}
	a.removeAttempt(at.e.OfferID)
	return nil
}

// upload sends spooled output from the last acknowledged offset, at most
// chunksPerTick chunks. final also sends the eof. It reports whether the
// stream is complete (or abandoned).
func (a *Agent) upload(ctx context.Context, at *attempt, final bool) bool {
	if at.eofDone || at.logsGaveUp {
		return true
	}
	if size, _ := at.sp.state(); final && size == 0 && at.uploaded == 0 {
		// Nothing was ever spooled, so nothing was sent: the authority
		// keeps no stream for a silent attempt and its completion ends it
		// (ADR 0032). An eof chunk would be one request and one
		// transaction per silent run for nothing.
		at.eofDone = true
		return true
	}
	for i := range chunksPerTick {
		if i > 0 && a.sess != nil && !a.cfg.Clock.Now().Before(a.sess.nextBeat) {
			return false // the heartbeat goes first; the upload resumes next pass
		}
		size, _ := at.sp.state()
		n := int(min(int64(len(a.buf)), size-at.uploaded))
		n = max(n, 0)
		eof := final && at.uploaded+int64(n) >= size
		if n == 0 && !eof {
			return false
		}
		if n > 0 {
			m, err := at.sp.readAt(a.buf[:n], at.uploaded)
			if err != nil || m != n {
				a.log.Error("spool unreadable; logs abandoned", "attempt", at.offer.AttemptID, "err", err)
				at.logsGaveUp = true
				return true
			}
		}
		body, err := protocol.LogChunk{LeaseRef: at.offer.Lease(at.e.LeaseToken), Stream: protocol.Stdout,
			Offset: at.uploaded, Data: a.buf[:n], EOF: eof}.Encode()
		if err != nil {
			a.log.Error("log chunk does not encode; logs abandoned", "attempt", at.offer.AttemptID, "err", err)
			at.logsGaveUp = true
			return true
		}
		resp, _, err := a.post(ctx, protocol.PathLeaseLog, body, protocol.DefaultBodyBytes)
		if err != nil {
			if client.IsUnknown(err) {
				a.backoff(at)
				return false
			}
			if client.StatusOf(err) == http.StatusConflict && !at.logRestarted {
				// A gap: the authority has less than we thought. Resend
				// from the start; it keeps only the new suffix.
				at.logRestarted, at.uploaded = true, 0
				continue
			}
			a.log.Warn("log upload refused; logs abandoned", "attempt", at.offer.AttemptID, "err", err)
			at.logsGaveUp = true
			return true
		}
		r, err := protocol.DecodeLogReceipt(resp.Body)
		if err != nil || r.AttemptID != at.offer.AttemptID {
			a.backoff(at)
			return false
		}
		at.failures = 0
		at.uploaded = min(r.NextOffset, size)
		if r.Closed || (eof && r.NextOffset >= size) {
			at.eofDone = true
			return true
		}
	}
	a.poke() // the pass budget ran out with output left: come back at once
	return false
}

// deliver uploads the rest of the log, then the completion; the entry is
// dropped on the receipt.
func (a *Agent) deliver(ctx context.Context, at *attempt) error {
	if at.sp == nil {
		// Nothing was spawned (cancelled at the start barrier, a start
		// failure): the spool is empty, and upload below sends nothing
		// for it (the completion ends a silent stream, ADR 0032).
		sp, err := openSpool(a.j.SpoolPath(at.e.OfferID), a.cfg.LogBytes, nil)
		if err != nil {
			return jerr(err)
		}
		at.sp = sp
	}
	if !a.upload(ctx, at, true) {
		return nil
	}
	if at.deferred && !at.e.RunningAcked && at.fenced == "" {
		// Its running ack waited for a batch that did not go (batch.go):
		// the authority records a completion only after it.
		if _, ok := a.ack(ctx, at, protocol.AckRunning); !ok || at.fenced != "" {
			return nil
		}
	}
	resp, _, err := a.post(ctx, protocol.PathLeaseComplete, at.e.Completion, protocol.DefaultBodyBytes)
	if err != nil {
		if client.IsUnknown(err) {
			a.backoff(at)
			return nil
		}
		return a.completionAnswered(at, protocol.CompletionReceipt{}, err)
	}
	r, err := protocol.DecodeCompletionReceipt(resp.Body)
	if err != nil || r.AttemptID != at.offer.AttemptID {
		a.backoff(at)
		return nil
	}
	return a.completionAnswered(at, r, nil)
}

// completionAnswered drops a delivered entry: on its receipt, or on a
// definite refusal (the record is dropped, never retried forever).
func (a *Agent) completionAnswered(at *attempt, r protocol.CompletionReceipt, refused error) error {
	if refused != nil {
		a.log.Warn("completion refused; record dropped", "attempt", at.offer.AttemptID, "err", refused)
		return a.dropDelivered(at)
	}
	a.log.Info("completion delivered", "attempt", at.offer.AttemptID, "disposition", r.Disposition)
	return a.dropDelivered(at)
}

func (a *Agent) dropDelivered(at *attempt) error {
	if err := a.j.DropEntry(at.e.OfferID); err != nil {
		return jerr(err)
	}
	a.removeAttempt(at.e.OfferID)
	return nil
}
