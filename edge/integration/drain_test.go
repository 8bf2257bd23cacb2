//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

// drainRun starts the binary with the given drain grace and a run that
// keeps running until the test creates its release file; it returns the
// process, the run and the release path once the attempt runs.
func drainRun(t *testing.T, data, grace string) (*proc, httpapi.Run, string) {
	t.Helper()
	release := filepath.Join(t.TempDir(), "release")
	p := startBinary(t, data, "--drain-grace", grace)
	c := p.client(t, data)
	c.createTask("long", shellSpec(`echo started; while [ ! -e `+release+` ]; do sleep 0.05; done; echo finished`,
		`,"retry":{"maxAttempts":2,"retryOnLost":true}`))
	var r httpapi.Run
	c.api("POST", "/api/v1/tasks/long/runs", nil, 201, &r)
	c.waitRun(r.ID, "to be running", attemptRunning)
	return p, r, release
}

// signalAndAwaitDrain sends SIGTERM and waits until the server logs that
// it is draining (the API is already closed then).
func signalAndAwaitDrain(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server to start draining", func() bool { return strings.Contains(p.stderr.String(), "draining") })
}

func awaitExit(t *testing.T, p *proc) {
	t.Helper()
	eventually(t, "ql3-edge to exit", func() bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	})
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after the drain: %d", code)
	}
}

// TestSigtermDrainsRunningAttempt: a restart (SIGTERM, start again) in the
// middle of a run lets it finish within the drain grace; after the restart
// it is succeeded on its first attempt, never lost.
func TestSigtermDrainsRunningAttempt(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p, r, release := drainRun(t, data, "30s")
	signalAndAwaitDrain(t, p)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	awaitExit(t, p)
	c := startBinary(t, data).client(t, data)
	got := c.run(r.ID)
	if got.Status != "succeeded" || len(got.Attempts) != 1 || got.Attempts[0].Status != "succeeded" {
		t.Fatalf("run after the restart: %s %q %+v, want succeeded on attempt 1", got.Status, got.Reason, got.Attempts)
	}
	status, body := c.raw("GET", "/api/v1/runs/"+r.ID+"/attempts/1/log", nil)
	if status != 200 || string(body) != "started\nfinished\n" {
		t.Errorf("log: %d %q", status, body)
	}
}

// TestSigtermAfterDrainGraceCancels: a run still running when the drain
// grace (1 s) is over is stopped and recorded cancelled, reason shutdown,
// not lost and not retried; its process is gone.
func TestSigtermAfterDrainGraceCancels(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p, r, _ := drainRun(t, data, "1s")
	pid := p.client(t, data).run(r.ID).Attempts[0].PID
	signalAndAwaitDrain(t, p)
	awaitExit(t, p)
	assertCancelledByShutdown(t, startBinary(t, data).client(t, data), r.ID, pid)
}

// TestSecondSignalStopsAtOnce: with a long grace, a second SIGTERM ends
// the drain at once; the run is recorded cancelled, reason shutdown.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p, r, _ := drainRun(t, data, "1h")
	pid := p.client(t, data).run(r.ID).Attempts[0].PID
	signalAndAwaitDrain(t, p)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	awaitExit(t, p)
	if !strings.Contains(p.stderr.String(), "second signal") {
		t.Error("the server did not log the second signal")
	}
	assertCancelledByShutdown(t, startBinary(t, data).client(t, data), r.ID, pid)
}

func assertCancelledByShutdown(t *testing.T, c *server, runID string, pid int) {
	t.Helper()
	got := c.run(runID)
	if got.Status != "cancelled" || got.Reason != "shutdown" || len(got.Attempts) != 1 || got.Attempts[0].Status != "cancelled" {
		t.Fatalf("run after the restart: %s reason %q %+v, want cancelled with reason shutdown on attempt 1", got.Status, got.Reason, got.Attempts)
	}
	if !processGone(pid) {
		t.Errorf("the attempt's process %d survived the shutdown", pid)
	}
}
