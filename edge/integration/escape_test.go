//go:build linux

package integration

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
)

// TestTimeoutKillsSetsidChild is issue #13 defect 6 as reported: a task
// running `setsid sleep 104 &` with a 2 s timeout. The setsid child leaves
// the attempt's process group and session; when the timeout ends the run,
// it must be dead and reaped too, not left running under init.
func TestTimeoutKillsSetsidChild(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	s := startServer(t, filepath.Join(dir, "data"), clk)
	pidFile := filepath.Join(dir, "setsid.pid")
	s.createTask("escape", shellSpec(fmt.Sprintf(`setsid sleep 104 & echo $! > %s; wait`, pidFile), `,"timeoutMs":2000`))
	var r httpapi.Run
	s.api("POST", "/api/v1/tasks/escape/runs", nil, 201, &r)
	s.waitRun(r.ID, "to be running", attemptRunning)
	pid := readPID(t, pidFile)
	var child executor.Identity
	eventually(t, "the setsid child to have its own session", func() bool {
		id, err := executor.ReadIdentity(pid)
		child = id
		return err == nil && id.PGID == pid // setsid done (and sleep exec'd in place)
	})
	var end httpapi.Run
	eventually(t, "the run to time out", func() bool {
		clk.Advance(time.Second)
		end = s.run(r.ID)
		return end.Status == "timed_out"
	})
	if now, err := executor.ReadIdentity(pid); err == nil && now.StartTicks == child.StartTicks {
		t.Fatalf("the setsid child (pid %d) outlived the timed-out run (it is alive or an unreaped zombie)", pid)
	}
}
