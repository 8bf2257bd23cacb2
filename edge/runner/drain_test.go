//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
)

// drainTask runs until the test creates its release file (an event, not a
// sleep), then exits 0; retries on lost so a lost record would show as a
// second attempt.
func drainTask(e *env, name string) (edge.Task, string) {
	release := filepath.Join(e.t.TempDir(), "release")
	task := e.task(name, shellTask("echo up; while [ ! -e "+release+" ]; do sleep 0.01; done; echo done", func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 2, RetryOnLost: true}
	}))
	return task, release
}

// shutdownAsync cancels the loop's context without waiting for Run to
// return (the drain runs meanwhile); the test's cleanup waits.
func (e *env) shutdownAsync() {
	e.cancel()
	e.cancel = nil
	<-e.r.drainCtl.started
}

func (e *env) awaitRunReturn() {
	e.t.Helper()
	if err := <-e.done; err != nil {
		e.t.Errorf("Run: %v", err)
	}
	e.exec.Wait()
}

// TestDrainLetsRunningAttemptFinish: a shutdown during a run with a 30 s
// drain grace lets it finish; it is succeeded, with one attempt.
func TestDrainLetsRunningAttemptFinish(t *testing.T) {
	e := newEnv(t)
	e.r.cfg.DrainGrace = 30 * time.Second
	task, release := drainTask(e, "drain-finish")
	r := e.runNow(task.ID)
	e.start()
	e.waitLog(r.ID, 1, "up")
	e.waitRun(r.ID, "running", status(run.RunRunning))
	e.shutdownAsync()
	<-e.r.drainCtl.timerSet
	e.clock.Advance(29 * time.Second) // inside the grace
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.awaitRunReturn()
	got := e.getRun(r.ID)
	if got.Status != run.RunSucceeded || got.AttemptCount != 1 {
		t.Fatalf("run after a drained shutdown = %s (attempt %d, reason %q), want succeeded on attempt 1", got.Status, got.AttemptCount, got.Reason)
	}
	if log := e.readLog(r.ID, 1); log != "up\ndone\n" {
		t.Fatalf("log = %q", log)
	}
}

// TestDrainGraceOverCancelsWithReasonShutdown: when the grace elapses the
// attempt is stopped and recorded cancelled (reason shutdown), not lost
// and not retried, and its process is gone.
func TestDrainGraceOverCancelsWithReasonShutdown(t *testing.T) {
	e := newEnv(t)
	e.r.cfg.DrainGrace = time.Second
	task, _ := drainTask(e, "drain-cancel")
	r := e.runNow(task.ID)
	e.start()
	e.waitLog(r.ID, 1, "up")
	e.waitRun(r.ID, "running", status(run.RunRunning))
	pid := e.attempts(r.ID)[0].PID
	e.shutdownAsync()
	<-e.r.drainCtl.timerSet
	e.clock.Advance(time.Second)
	e.awaitRunReturn()
	assertShutdownCancelled(t, e, r.ID, pid)
}

// TestStopNowEndsTheDrain: a second signal (StopNow) waits neither for
// the drain grace nor for the kill grace: an attempt that ignores SIGTERM
// ends at once, without a step of the clock.
func TestStopNowEndsTheDrain(t *testing.T) {
	e := newEnv(t)
	e.r.cfg.DrainGrace = time.Hour
	task := e.task("drain-now", shellTask("trap '' TERM; echo up; while :; do sleep 0.01; done", nil))
	r := e.runNow(task.ID)
	e.start()
	e.waitLog(r.ID, 1, "up")
	e.waitRun(r.ID, "running", status(run.RunRunning))
	pid := e.attempts(r.ID)[0].PID
	e.shutdownAsync()
	<-e.r.drainCtl.timerSet
	e.r.StopNow()
	e.awaitRunReturn()
	assertShutdownCancelled(t, e, r.ID, pid)
}

// TestShutdownWithoutGraceCancels: DrainGrace 0 stops at once, also
// recorded cancelled with reason shutdown.
func TestShutdownWithoutGraceCancels(t *testing.T) {
	e := newEnv(t)
	task, _ := drainTask(e, "drain-zero")
	r := e.runNow(task.ID)
	e.start()
	e.waitLog(r.ID, 1, "up")
	e.waitRun(r.ID, "running", status(run.RunRunning))
	pid := e.attempts(r.ID)[0].PID
	e.stop()
	assertShutdownCancelled(t, e, r.ID, pid)
}

func assertShutdownCancelled(t *testing.T, e *env, runID string, pid int) {
	t.Helper()
	got := e.getRun(runID)
	if got.Status != run.RunCancelled || got.Reason != edge.ReasonShutdown || got.AttemptCount != 1 {
		t.Fatalf("run after shutdown = %s reason %q attempt %d, want cancelled, reason shutdown, attempt 1", got.Status, got.Reason, got.AttemptCount)
	}
	if a := e.attempts(runID)[0]; a.Status != run.AttemptCancelled {
		t.Fatalf("attempt = %+v", a)
	}
	if !gone(pid) {
		t.Fatal("process survived shutdown")
	}
}
