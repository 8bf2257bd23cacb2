//go:build linux

package executor

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/core/run"
)

// escapeScript starts four descendants that each try to outlive the
// attempt, prints their pids and waits:
//   - setsid: a new session (and group), so a group kill misses it;
//   - double: a double fork; its parent subshell exits at once, so it is
//     re-parented away from the attempt's leader;
//   - doublesetsid: both at once;
//   - grandchild: an ordinary child of the leader.
//
// Each redirects its output away from the attempt's pipe, so the attempt
// ends whether or not they survive (the test then fails on them rather
// than hanging on the drain).
const escapeScript = `
setsid sh -c 'echo "setsid=$$"; exec sleep 100 >/dev/null 2>&1' &
(sh -c 'echo "double=$$"; exec sleep 100 >/dev/null 2>&1' &) &
(setsid sh -c 'echo "doublesetsid=$$"; exec sleep 100 >/dev/null 2>&1' &) &
sh -c 'echo "grandchild=$$"; exec sleep 100 >/dev/null 2>&1' &
wait`

var escapeNames = []string{"setsid", "double", "doublesetsid", "grandchild"}

// startEscapers starts escapeScript and returns the identities of the four
// descendants once they all run (read from the output: an event, no sleep).
func startEscapers(t *testing.T, e *Executor, runID string, timeout time.Duration) (*Handle, map[string]Identity) {
	t.Helper()
	out := newOutput()
	h := start(t, e, Request{RunID: runID, Attempt: 1, Spec: Spec{ShellCommand: escapeScript, Timeout: timeout}, Output: out})
	ids := make(map[string]Identity, len(escapeNames))
	for _, name := range escapeNames {
		pid, _ := strconv.Atoi(out.waitFor(t, regexp.MustCompile(name+`=(\d+)`), h.Done()))
		id, err := ReadIdentity(pid)
		if err != nil {
			t.Fatalf("%s (pid %d) is not running: %v", name, pid, err)
		}
		ids[name] = id
	}
	return h, ids
}

// assertAllGone fails for each descendant that still runs or that is left
// as an unreaped zombie child of this process.
func assertAllGone(t *testing.T, ids map[string]Identity) {
	t.Helper()
	for _, name := range escapeNames {
		id := ids[name]
		st, err := readProcStat(id.PID)
		switch {
		case err != nil || st.StartTicks != id.StartTicks:
			// gone (the pid may have been reused by an unrelated process)
		case st.State == 'Z' && st.PPID == os.Getpid():
			t.Errorf("%s (pid %d) is dead but left unreaped as our zombie", name, id.PID)
		case st.State != 'Z' && st.State != 'X':
			t.Errorf("%s (pid %d) survived the attempt (state %c, parent %d)", name, id.PID, st.State, st.PPID)
		}
	}
}

// TestTimeoutKillsEscapedDescendants is issue #13 defect 6: a child that
// calls setsid or double-forks used to survive the timeout kill.
func TestTimeoutKillsEscapedDescendants(t *testing.T) {
	e, fake := newTestExecutor(t, nil)
	h, ids := startEscapers(t, e, "escape-timeout", 2*time.Second)
	waitTimers(t, fake, 1) // the timeout timer
	fake.Advance(2 * time.Second)
	res := h.Wait()
	if res.Status != run.AttemptTimedOut {
		t.Fatalf("result = %+v", res)
	}
	assertAllGone(t, ids)
	// The reaper forgets them once gone: its memory does not grow per attempt.
	reapAdopted()
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	for name, id := range ids {
		if _, ok := reaper.adopted[id.PID]; ok {
			t.Errorf("%s (pid %d) still remembered by the reaper", name, id.PID)
		}
	}
}

func TestCancelKillsEscapedDescendants(t *testing.T) {
	for _, noCgroups := range []bool{false, true} { // the cgroup and the subreaper path
		e, _ := newTestExecutor(t, func(c *Config) { c.NoCgroups = noCgroups })
		h, ids := startEscapers(t, e, "escape-cancel", 0)
		if !e.Cancel("escape-cancel", 1, "cancelled") {
			t.Fatal("Cancel did not find the attempt")
		}
		if res := h.Wait(); res.Status != run.AttemptCancelled {
			t.Fatalf("noCgroups %v: result = %+v", noCgroups, res)
		}
		assertAllGone(t, ids)
	}
}

// TestEscapedDescendantsKilledWhenLeaderExits: the leader exits 0 once
// they all run (the test releases it through a FIFO); nothing of the
// attempt may outlive it.
func TestEscapedDescendantsKilledWhenLeaderExits(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	fifo := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := strings.TrimSuffix(escapeScript, "wait") + "read line < " + fifo + "; echo released"
	out := newOutput()
	h := start(t, e, Request{RunID: "escape-exit", Attempt: 1, Spec: Spec{ShellCommand: script}, Output: out})
	ids := make(map[string]Identity, len(escapeNames))
	for _, name := range escapeNames {
		pid, _ := strconv.Atoi(out.waitFor(t, regexp.MustCompile(name+`=(\d+)`), h.Done()))
		id, err := ReadIdentity(pid)
		if err != nil {
			t.Fatalf("%s (pid %d) is not running: %v", name, pid, err)
		}
		ids[name] = id
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := h.Wait(); res.Status != run.AttemptSucceeded || !strings.Contains(out.String(), "released") {
		t.Fatalf("result = %+v, output %q", res, out.String())
	}
	assertAllGone(t, ids)
}

// TestEscapesWithoutChildrenFiles repeats the timeout case on the path of
// a kernel without /proc/<pid>/task/<tid>/children (routers): every
// attempt end then scans /proc.
func TestEscapesWithoutChildrenFiles(t *testing.T) {
	listOwnChildren = func() ([]int, bool) { return nil, false }
	defer func() { listOwnChildren = ownChildren }()
	// Without cgroups: the attempt's processes are found in /proc.
	e, fake := newTestExecutor(t, func(c *Config) { c.NoCgroups = true })
	h, ids := startEscapers(t, e, "escape-nochildren", 2*time.Second)
	waitTimers(t, fake, 1)
	fake.Advance(2 * time.Second)
	if res := h.Wait(); res.Status != run.AttemptTimedOut {
		t.Fatalf("result = %+v", res)
	}
	assertAllGone(t, ids)
	// An ordinary attempt ends as before.
	if res := start(t, e, Request{RunID: "plain-nochildren", Spec: Spec{ShellCommand: "sleep 1000 & exit 3"}}).Wait(); res.ExitCode == nil || *res.ExitCode != 3 {
		t.Fatalf("result = %+v", res)
	}
}

func TestOwnChildren(t *testing.T) {
	child := exec.Command("sleep", "100")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	kids, ok := ownChildren()
	if !ok {
		// Only a kernel without children files (CONFIG_PROC_CHILDREN off)
		// may say so; the scan path it then takes is TestEscapesWithoutChildrenFiles.
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); !os.IsNotExist(err) {
			t.Fatalf("ownChildren reported no children files, but the main thread's is there (%v)", err)
		}
		return
	}
	found := false
	for _, k := range kids {
		found = found || k == child.Process.Pid
	}
	if !found {
		t.Fatalf("ownChildren = %v; want it to hold %d", kids, child.Process.Pid)
	}
}

// TestKillSkipsTheGrace: Kill ends an attempt that ignores SIGTERM at
// once, during a Stop's grace (keeping that Stop's outcome) or alone (with
// its own), and takes its escaped descendants with it.
func TestKillSkipsTheGrace(t *testing.T) {
	e, fake := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{RunID: "kill-after-stop", Spec: Spec{ShellCommand: `trap '' TERM; echo ready; while :; do sleep 1; done`}, Output: out})
	out.waitFor(t, regexp.MustCompile("ready"), h.Done())
	h.Stop(run.AttemptCancelled, run.ErrorCancelledByUser, "cancelled")
	waitTimers(t, fake, 1) // SIGTERM sent (ignored), the grace is running
	h.Kill(run.AttemptLost, run.ErrorWorkerLost, "lease lapsing")
	res := h.Wait() // no clock step: the grace never elapses
	if res.Status != run.AttemptCancelled || res.Message != "cancelled" || res.Signal != "killed" {
		t.Fatalf("result = %+v; want the Stop's outcome, killed", res)
	}

	h, ids := startEscapers(t, e, "kill-alone", 0)
	h.Kill(run.AttemptLost, run.ErrorWorkerLost, "lease lapsing")
	if res := h.Wait(); res.Status != run.AttemptLost || res.ErrorClass != run.ErrorWorkerLost || res.Signal != "killed" {
		t.Fatalf("result = %+v", res)
	}
	assertAllGone(t, ids)
}
