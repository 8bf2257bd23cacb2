package runner

import (
	"sync"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
)

// drainState lets the owner cut a drain short (a second signal).
type drainState struct {
	once     sync.Once
	now      chan struct{}
	started  chan struct{} // closed when shutdown begins
	timerSet chan struct{} // closed when the drain grace timer runs (tests step the clock after it)
}

// StopNow ends a drain that is in progress (or the next one) at once: the
// attempts still running are stopped without waiting for the drain grace.
// Safe to call more than once and from any goroutine.
func (r *Runner) StopNow() {
	r.drainCtl.once.Do(func() { close(r.drainCtl.now) })
}

// shutdown runs when Run's context ends. The loop has stopped claiming and
// starting; running attempts get Config.DrainGrace to finish on their own
// (their results are recorded as usual). Whatever still runs after the
// grace is stopped like a cancel (SIGTERM, the kill grace, SIGKILL) and
// recorded cancelled with reason shutdown: the runner knows what happened
// to it, so it is never lost (ADR 0040). StopNow (a second signal) cuts the
// grace short and skips the kill grace (SIGKILL at once), with the same
// record. shutdown returns once every result is recorded.
func (r *Runner) shutdown() {
	close(r.drainCtl.started)
	if n := r.Running(); n > 0 && r.cfg.DrainGrace > 0 {
		r.log.Info("draining: waiting for running attempts before stopping them", "running", n, "grace", r.cfg.DrainGrace.String())
		r.awaitIdle(r.cfg.DrainGrace)
	}
	if n := r.stopActive(r.stopNowRequested()); n > 0 {
		r.log.Warn("drain over: stopping running attempts", "count", n)
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-r.drainCtl.now:
		r.stopActive(true) // a second signal during the kill grace
		<-done
	}
}

// stopActive stops every running attempt as cancelled by the shutdown:
// with the kill grace, or at once (SIGKILL) when now. It returns how many.
func (r *Runner) stopActive(now bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.active {
		a.shutdown = true
		if now {
			a.h.Kill(run.AttemptCancelled, run.ErrorCancelledByUser, shutdownMessage)
		} else {
			a.h.Stop(run.AttemptCancelled, run.ErrorCancelledByUser, shutdownMessage)
		}
	}
	return len(r.active)
}

const shutdownMessage = "ql3-edge shut down while the attempt ran"

func (r *Runner) stopNowRequested() bool {
	select {
	case <-r.drainCtl.now:
		return true
	default:
		return false
	}
}

// awaitIdle waits until no attempt runs, the grace elapses or StopNow.
func (r *Runner) awaitIdle(grace time.Duration) {
	t := r.clock.NewTimer(grace)
	defer t.Stop()
	close(r.drainCtl.timerSet)
	for {
		ch := r.changes()
		if r.Running() == 0 {
			return
		}
		select {
		case <-ch:
		case <-t.C():
			return
		case <-r.drainCtl.now:
			return
		}
	}
}

// shutdownReason is the run reason of an attempt the drain stopped.
func shutdownReason(a *attempt, res run.AttemptStatus) string {
	if a.shutdown && res == run.AttemptCancelled {
		return edge.ReasonShutdown
	}
	return ""
}
