//go:build linux

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
)

// shellSpec is a spec running script with /bin/sh.
func shellSpec(script, extra string) string {
	q := strings.ReplaceAll(strings.ReplaceAll(script, `\`, `\\`), `"`, `\"`)
	return `{"kind":"qinglong/command@v1","shell":{"command":"` + q + `"}` + extra + `}`
}

// TestTimeoutKillsWholeProcessGroup: the task's shell starts a grandchild
// that ignores SIGTERM and then waits. When the (fake) clock passes the
// timeout, the run ends timed_out and the grandchild is gone too.
func TestTimeoutKillsWholeProcessGroup(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	s := startServer(t, filepath.Join(dir, "data"), clk)
	pidFile := filepath.Join(dir, "grandchild.pid")
	script := fmt.Sprintf(`(trap '' TERM; exec sleep 300) & echo $! > %s; wait`, pidFile)
	s.createTask("slow", shellSpec(script, `,"timeoutMs":5000`))
	var r httpapi.Run
	s.api("POST", "/api/v1/tasks/slow/runs", nil, 201, &r)
	s.waitRun(r.ID, "to be running", attemptRunning)
	grandchild := readPID(t, pidFile)
	if processGone(grandchild) {
		t.Fatal("the grandchild is not running before the timeout")
	}
	// Step past the timeout, then past the SIGTERM → SIGKILL grace, until
	// the run has ended.
	var end httpapi.Run
	eventually(t, "the run to time out", func() bool {
		clk.Advance(time.Second)
		end = s.run(r.ID)
		return end.Status == "timed_out"
	})
	if a := end.Attempts[0]; a.Status != "timed_out" || a.ErrorClass != "timeout" {
		t.Errorf("attempt %+v", a)
	}
	eventually(t, "the grandchild to be gone", func() bool { return processGone(grandchild) })
	if got := len(s.runs(r.TaskID)); got != 1 {
		t.Errorf("%d runs, want 1 (a timeout is not retried by default)", got)
	}
}

// TestConcurrencyForbid: while a run of a forbid task is active, a second
// run is recorded as skipped (cancelled, reason concurrency_forbid) and
// never started; the first keeps running.
func TestConcurrencyForbid(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, t.TempDir(), clk)
	s.createTask("single", shellSpec("sleep 30", `,"concurrency":"forbid"`))
	var first, second httpapi.Run
	s.api("POST", "/api/v1/tasks/single/runs", nil, 201, &first)
	s.waitRun(first.ID, "to be running", attemptRunning)
	s.api("POST", "/api/v1/tasks/single/runs", nil, 201, &second)
	if second.Status != "cancelled" || second.Reason != "concurrency_forbid" {
		t.Fatalf("second run under forbid: %+v", second)
	}
	var ev httpapi.List[httpapi.RunEvent]
	s.api("GET", "/api/v1/runs/"+second.ID+"/events", nil, 200, &ev)
	if !hasEvent(ev.Items, "run.skipped") || hasEvent(ev.Items, "run.running") {
		t.Errorf("second run events %+v", ev.Items)
	}
	if r := s.run(first.ID); !attemptRunning(r) {
		t.Errorf("the first run stopped: %+v", r)
	}
	// Cancel stops the first run's process group.
	s.api("POST", "/api/v1/runs/"+first.ID+"/cancel", nil, 202, nil)
	end := s.waitRun(first.ID, "to be cancelled", status("cancelled"))
	if pid := end.Attempts[0].PID; !processGone(pid) {
		eventually(t, "the cancelled process to be gone", func() bool { return processGone(pid) })
	}
}

// TestConcurrencyReplace: a new run of a replace task cancels the active
// one (reason concurrency_replace) and starts once the old one has ended.
func TestConcurrencyReplace(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, t.TempDir(), clk)
	s.createTask("latest", shellSpec("sleep 30", `,"concurrency":"replace"`))
	var first, second httpapi.Run
	s.api("POST", "/api/v1/tasks/latest/runs", nil, 201, &first)
	old := s.waitRun(first.ID, "to be running", attemptRunning)
	s.api("POST", "/api/v1/tasks/latest/runs", nil, 201, &second)
	if second.Status != "queued" {
		t.Fatalf("replacing run: %+v", second)
	}
	replaced := s.waitRun(first.ID, "to be replaced", status("cancelled"))
	if replaced.Reason != "concurrency_replace" {
		t.Errorf("replaced run reason %q", replaced.Reason)
	}
	eventually(t, "the replaced process to be gone", func() bool { return processGone(old.Attempts[0].PID) })
	s.waitRun(second.ID, "to be running", attemptRunning)
	runs := s.runs(first.TaskID)
	if len(runs) != 2 {
		t.Errorf("%d runs, want 2", len(runs))
	}
	s.api("POST", "/api/v1/runs/"+second.ID+"/cancel", nil, 202, nil)
	s.waitRun(second.ID, "to be cancelled", status("cancelled"))
}

func hasEvent(events []httpapi.RunEvent, typ string) bool {
	for _, e := range events {
		if e.Type == typ {
			return true
		}
	}
	return false
}
