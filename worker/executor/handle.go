package executor

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/ql3/ql3/core/run"
)

// Handle is a started attempt.
type Handle struct {
	e         *Executor
	req       Request
	id        string
	ident     Identity
	startedAt time.Time
	slot      *Slot
	cmd       *exec.Cmd
	out       *os.File      // read end of the output pipe
	cg        *attemptGroup // nil: no cgroup

	mu     sync.Mutex
	stop   *stopRequest
	stopCh chan struct{} // closed by the first Stop
	killCh chan struct{} // closed by the first Kill
	killed bool

	done   chan struct{}
	result Result

	timeout Timer            // armed by Start when the spec has a timeout
	seen    map[int]Identity // processes of the attempt found so far; supervise only
}

type stopRequest struct {
	status  run.AttemptStatus
	class   run.ErrorClass
	message string
}

// Identity is the process identity of the group leader; the runner persists
// it so crash recovery can tell the attempt's process from a reused pid.
func (h *Handle) Identity() Identity { return h.ident }

// StartedAt is when the process was spawned (by the executor's clock).
func (h *Handle) StartedAt() time.Time { return h.startedAt }

// Request is what was started.
func (h *Handle) Request() Request { return h.req }

// Done is closed when the attempt has ended, its group is gone and its
// output has been drained.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Wait blocks until Done and returns the result.
func (h *Handle) Wait() Result {
	<-h.done
	return h.result
}

// Stop ends the attempt with the given outcome: SIGTERM to the group, then
// SIGKILL after the kill grace. Only the first Stop counts; a Stop after the
// process already exited changes nothing. status must be cancelled,
// timed_out or lost.
func (h *Handle) Stop(status run.AttemptStatus, class run.ErrorClass, message string) {
	h.end(status, class, message, false)
}

// Kill ends the attempt at once: SIGKILL to its group and its marked
// descendants, with no grace (even if a Stop's grace is running). The
// outcome is the first Stop's, or the one given here if none came before.
// For when the grace no longer fits: a lease about to lapse (self-fencing),
// a second SIGTERM to the binary.
func (h *Handle) Kill(status run.AttemptStatus, class run.ErrorClass, message string) {
	h.end(status, class, message, true)
}

// end records the first outcome and, for Kill, the kill request, under
// one lock, so supervise never sees a Kill's stop without its kill.
func (h *Handle) end(status run.AttemptStatus, class run.ErrorClass, message string, kill bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if kill && !h.killed {
		h.killed = true
		close(h.killCh)
	}
	if h.stop == nil {
		h.stop = &stopRequest{status: status, class: class, message: message}
		close(h.stopCh)
	}
}

func (h *Handle) killRequested() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.killed
}

func (h *Handle) stopRequest() *stopRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stop
}

// drain copies the pipe into out until EOF or until the pipe is closed.
// Write errors are ignored so the child never blocks on a full pipe.
func drain(r *os.File, out io.Writer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && out != nil {
			_, _ = out.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// finish publishes the result and frees the slot.
func (h *Handle) finish(res Result) {
	h.result = res
	h.e.mu.Lock()
	delete(h.e.running, h.id)
	h.e.mu.Unlock()
	h.slot.Release()
	close(h.done)
}
