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
	"github.com/ql3/ql3/worker/clock"
)

// needCgroups returns an executor with cgroup containment. It skips only
// when the kernel offers neither cgroup v1 nor v2 here (no cgroup file
// system mounted at all); where one is mounted, containment must be on.
func needCgroups(t *testing.T, mod func(*Config)) (*Executor, *clock.Fake) {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if len(parseCgroupMounts(string(mi))) == 0 {
		t.Skip("the kernel offers neither cgroup v1 nor cgroup v2 here (none mounted): per-attempt cgroups cannot be tested")
	}
	e, fake := newTestExecutor(t, mod)
	if e.cg == nil {
		t.Fatalf("a cgroup file system is mounted but containment is off: %s", e.Containment())
	}
	return e, fake
}

// TestAttemptRunsInItsOwnCgroup: the child is born in its attempt's
// groups (every hierarchy in use), with the limits of its spec, and the
// groups are removed once it settled.
func TestAttemptRunsInItsOwnCgroup(t *testing.T) {
	e, _ := needCgroups(t, nil)
	t.Logf("containment: %s", e.Containment())
	out := newOutput()
	h := start(t, e, Request{RunID: "cg-own", Spec: Spec{ShellCommand: "cat /proc/self/cgroup; echo done", MaxProcesses: 64, MemoryBytes: 64 << 20}, Output: out})
	g := h.cg
	if g == nil {
		t.Fatal("the attempt has no cgroup")
	}
	res := h.Wait()
	if res.Status != run.AttemptSucceeded {
		t.Fatalf("result = %+v, output %q", res, out.String())
	}
	lines := out.String()
	if g.v2 != "" && !strings.Contains(lines, "0::") {
		t.Fatalf("no v2 line in %q", lines)
	}
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		if line == "done" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		used := false
		if parts[1] == "" {
			used = g.v2 != ""
		}
		for _, c := range strings.Split(parts[1], ",") {
			used = used || g.v1[c] != ""
		}
		if used && !strings.HasSuffix(parts[2], "/"+cgroupParentName+"/"+g.name) {
			t.Errorf("the child is not in its attempt group: %q (group %s)", line, g.name)
		}
	}
	// The thread that forked the child went back: no thread of this
	// process is left in an attempt group.
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, f := range tasks {
		if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), "/"+cgroupParentName+"/") {
			t.Errorf("%s: a thread of the executor stayed in an attempt group:\n%s", f, data)
		}
	}
	if dir := g.v1["pids"]; dir != "" || g.v2 != "" {
		for _, d := range []string{g.v2, g.v1["pids"], g.v1["memory"], g.v1["freezer"]} {
			if d == "" {
				continue
			}
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("group %s not removed after the attempt: %v", d, err)
			}
		}
	}
}

// containScript starts an escapee that drops its environment and its
// session (setsid env -i: neither the group kill nor the marker search
// finds it), then a fork bomb, and waits on a FIFO with a shell builtin
// (no fork left once the bomb saturates pids.max).
func containScript(fifo string) string {
	return `setsid env -i /bin/sleep 1000 >/dev/null 2>&1 &
echo "escapee=$!"
b() { b | b & }
(b >/dev/null 2>&1 &)
echo bombing
read line < ` + fifo + `
echo released`
}

// TestCgroupContainsEscapeeAndForkBomb: a setsid env -i child and a fork
// bomb held by pids.max are gone after a timeout, a cancel and the
// leader's exit.
func TestCgroupContainsEscapeeAndForkBomb(t *testing.T) {
	for _, end := range []string{"timeout", "cancel", "exit"} {
		t.Run(end, func(t *testing.T) {
			e, fake := needCgroups(t, nil)
			runCgroupContainment(t, e, fake, end)
		})
	}
}

// TestCgroupV1OnlyContainsEscapeeAndForkBomb: the same on the v1
// hierarchies alone (freeze, SIGKILL, thaw), where the host has them.
func TestCgroupV1OnlyContainsEscapeeAndForkBomb(t *testing.T) {
	e, fake := needCgroups(t, nil)
	if len(e.cg.v1Parent) == 0 || e.cg.v1Parent["pids"] == "" {
		t.Skip("no writable cgroup v1 pids hierarchy here; the v2 path is TestCgroupContainsEscapeeAndForkBomb")
	}
	e.cgSkipV2 = true
	runCgroupContainment(t, e, fake, "cancel")
	runCgroupContainment(t, e, fake, "exit")
}

func runCgroupContainment(t *testing.T, e *Executor, fake *clock.Fake, end string) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const maxProcs = 24
	var timeout time.Duration
	if end == "timeout" {
		timeout = time.Hour
	}
	out := newOutput()
	runID := "cg-" + end
	h := start(t, e, Request{RunID: runID, Spec: Spec{ShellCommand: containScript(fifo), Timeout: timeout, MaxProcesses: maxProcs}, Output: out})
	pid, _ := strconv.Atoi(out.waitFor(t, regexp.MustCompile(`escapee=(\d+)`), h.Done()))
	escapee, err := ReadIdentity(pid)
	if err != nil {
		t.Fatalf("escapee %d: %v", pid, err)
	}
	out.waitFor(t, regexp.MustCompile("bombing"), h.Done())
	// The bomb fills the group up to pids.max and no further.
	var members []int
	for deadline := time.Now().Add(10 * time.Second); ; {
		members = h.cg.members()
		if len(members) >= maxProcs/2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond) // the bomb grows on its own time; only bounds the look
	}
	if n := pidsCurrent(h.cg); n > maxProcs {
		t.Fatalf("%d tasks in the group, over pids.max %d", n, maxProcs)
	}
	if len(members) < maxProcs/2 {
		t.Fatalf("the fork bomb did not grow (%d members)", len(members))
	}
	var idents []Identity
	for _, p := range members {
		if id, err := ReadIdentity(p); err == nil {
			idents = append(idents, id)
		}
	}
	switch end {
	case "timeout":
		waitTimers(t, fake, 1)
		fake.Advance(time.Hour)
	case "cancel":
		e.Cancel(runID, 1, "cancelled")
	case "exit":
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("go\n")
		f.Close()
	}
	res := h.Wait()
	want := map[string]run.AttemptStatus{"timeout": run.AttemptTimedOut, "cancel": run.AttemptCancelled, "exit": run.AttemptSucceeded}[end]
	if res.Status != want {
		t.Fatalf("result = %+v, want %s; output %q", res, want, out.String())
	}
	if escapee.Alive() {
		t.Errorf("the setsid env -i child (pid %d) survived the %s", escapee.PID, end)
	}
	for _, id := range idents {
		if id.Alive() {
			t.Errorf("fork bomb process %d survived the %s", id.PID, end)
		}
	}
}

// pidsCurrent reads the group's task count (v1 or v2 pids controller).
func pidsCurrent(g *attemptGroup) int {
	for _, d := range []string{g.v1["pids"], g.v2} {
		if d == "" {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(d, "pids.current")); err == nil {
			n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			return n
		}
	}
	return len(g.members())
}

// TestMemoryLimitEndsAttemptOOM: memory beyond the limit ends the attempt
// failed, reason oom, with a line in its output.
func TestMemoryLimitEndsAttemptOOM(t *testing.T) {
	e, _ := needCgroups(t, nil)
	if _, mem := e.cg.limitsOn(); !mem {
		t.Skip("no memory controller can be used here: " + e.Containment())
	}
	out := newOutput()
	// The shell holds the whole command substitution in memory.
	script := `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo "survived ${#x}"`
	h := start(t, e, Request{RunID: "cg-oom", Spec: Spec{ShellCommand: script, MemoryBytes: 32 << 20}, Output: out})
	res := h.Wait()
	if res.Status != run.AttemptFailed || res.Reason != ReasonOOM || res.ErrorClass != run.ErrorProcessExit {
		t.Fatalf("result = %+v, output %q", res, out.String())
	}
	if !strings.Contains(out.String(), "[ql3: out of memory") {
		t.Fatalf("output %q has no out-of-memory line", out.String())
	}
	// Within the limit the same kind of script succeeds.
	ok := start(t, e, Request{RunID: "cg-oom-ok", Spec: Spec{ShellCommand: `x=$(head -c 1000000 /dev/zero | tr '\0' a); echo ${#x}`, MemoryBytes: 32 << 20}}).Wait()
	if ok.Status != run.AttemptSucceeded {
		t.Fatalf("within the limit: %+v", ok)
	}
}

// TestLeftoverGroupsOfADeadSupervisorAreCleaned: a group whose owner is
// gone (a crashed ql3 process) is killed and removed at start; a live
// owner's group is left alone.
func TestLeftoverGroupsOfADeadSupervisorAreCleaned(t *testing.T) {
	e, _ := needCgroups(t, nil)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := e.cg.parents()[0]
	leftover := filepath.Join(parent, attemptGroupName(dead.Process.Pid, 1, 1))
	live := filepath.Join(parent, attemptGroupName(os.Getpid(), e.cg.ownStart, 1<<40))
	for _, d := range []string{leftover, live} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = syscall.Rmdir(live); _ = syscall.Rmdir(parent) }()
	orphan := exec.Command("sleep", "1000")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = orphan.Process.Kill(); _ = orphan.Wait() }()
	procs := "cgroup.procs"
	if parent != e.cg.v2Parent {
		procs = "tasks"
	}
	if err := writeFile(filepath.Join(leftover, procs), strconv.Itoa(orphan.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	e.cg.cleanLeftovers()
	if err := orphan.Wait(); err == nil {
		t.Fatal("the leftover group's process was not killed")
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("leftover group not removed: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live supervisor's group was removed: %v", err)
	}
}
