package runner

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/worker/executor"
)

// escapeScript starts descendants that try to outlive the attempt (a
// setsid, a double fork, both, an ordinary grandchild), prints their pids
// and waits. Their output goes elsewhere so a survivor fails the test
// instead of holding the log pipe.
const escapeScript = `
setsid sh -c 'echo "setsid=$$"; exec sleep 100 >/dev/null 2>&1' &
(sh -c 'echo "double=$$"; exec sleep 100 >/dev/null 2>&1' &) &
(setsid sh -c 'echo "doublesetsid=$$"; exec sleep 100 >/dev/null 2>&1' &) &
sh -c 'echo "grandchild=$$"; exec sleep 100 >/dev/null 2>&1' &
echo started; wait`

var escapeNames = []string{"setsid", "double", "doublesetsid", "grandchild"}

// escapers waits until the attempt's log names all four descendants and
// returns their identities.
func (e *env) escapers(runID string) map[string]executor.Identity {
	e.t.Helper()
	ids := make(map[string]executor.Identity, len(escapeNames))
	for _, name := range escapeNames {
		log := e.waitLog(runID, 1, name+"=")
		m := regexp.MustCompile(name + `=(\d+)\n`).FindStringSubmatch(log)
		for m == nil { // the line is not complete yet
			log = e.waitLog(runID, 1, name+"=")
			m = regexp.MustCompile(name + `=(\d+)\n`).FindStringSubmatch(log)
		}
		pid, _ := strconv.Atoi(m[1])
		id, err := executor.ReadIdentity(pid)
		if err != nil {
			e.t.Fatalf("%s (pid %d) is not running: %v", name, pid, err)
		}
		ids[name] = id
	}
	return ids
}

// assertEscapersGone fails for a descendant that still runs or is left as
// an unreaped zombie child of this process.
func assertEscapersGone(t *testing.T, ids map[string]executor.Identity) {
	t.Helper()
	for _, name := range escapeNames {
		id := ids[name]
		data, err := os.ReadFile("/proc/" + itoa(id.PID) + "/stat")
		if err != nil {
			continue
		}
		now, err := executor.ReadIdentity(id.PID)
		if err != nil || now.StartTicks != id.StartTicks {
			continue // gone; the pid names another process now
		}
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		t.Errorf("%s (pid %d) outlived the attempt: state %s, parent %s", name, id.PID, fields[0], fields[1])
	}
}

// TestTimeoutKillsEscapedDescendantsThroughRunner is issue #13 defect 6
// through the edge: a 2 s timeout ends the attempt, and every descendant,
// also those that called setsid or double-forked, is dead and reaped.
func TestTimeoutKillsEscapedDescendantsThroughRunner(t *testing.T) {
	e := newEnv(t)
	task := e.task("escape", shellTask(escapeScript, func(c *spec.Command) { c.TimeoutMs = 2000 }))
	r := e.runNow(task.ID)
	e.start()
	ids := e.escapers(r.ID)
	e.waitRun(r.ID, "running", status(run.RunRunning))
	e.clock.Advance(2 * time.Second)
	e.waitRun(r.ID, "timed_out", status(run.RunTimedOut))
	assertEscapersGone(t, ids)
}

func TestCancelKillsEscapedDescendantsThroughRunner(t *testing.T) {
	e := newEnv(t)
	task := e.task("escape", shellTask(escapeScript, nil))
	r := e.runNow(task.ID)
	e.start()
	ids := e.escapers(r.ID)
	e.waitRun(r.ID, "running", status(run.RunRunning))
	if _, err := e.store.RequestCancel(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	e.waitRun(r.ID, "cancelled", status(run.RunCancelled))
	assertEscapersGone(t, ids)
}
