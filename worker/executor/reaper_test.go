//go:build linux

package executor

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// orphan starts `sleep` through a shell that exits at once, so the sleep
// is re-parented to this (subreaper) process; env is its environment.
func orphan(t *testing.T, env []string) Identity {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan pid %q: %v", out, err)
	}
	st, err := readProcStat(pid)
	if err != nil || st.PPID != os.Getpid() {
		t.Fatalf("orphan %d: stat %+v, %v; want it re-parented to us (pid %d)", pid, st, err, os.Getpid())
	}
	return Identity{PID: pid, PGID: st.PGID, StartTicks: st.StartTicks}
}

// killToZombie SIGKILLs a child of ours and waits, without reaping, until
// it is a zombie (waitid WNOWAIT: an event, no polling).
func killToZombie(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitNoReap(pid); err != nil {
		t.Fatal(err)
	}
}

func reaped(id Identity) bool {
	st, err := readProcStat(id.PID)
	return err != nil || st.StartTicks != id.StartTicks
}

func setPidfdTracked(v bool) (restore func()) {
	reaper.mu.Lock()
	old := reaper.pidfdTracked
	reaper.pidfdTracked = v
	reaper.mu.Unlock()
	return func() {
		reaper.mu.Lock()
		reaper.pidfdTracked = old
		reaper.mu.Unlock()
	}
}

// TestReaperNeverStealsAnOsExecChild: the reaper reaps orphans re-parented
// to us, one pid at a time, and leaves a zombie that os/exec will still
// wait for alone, so its Wait gets the real exit status (a wait(-1) would
// have taken it). Both ways of finding our zombie children: the children
// files, and the /proc snapshot of a kernel without them.
func TestReaperNeverStealsAnOsExecChild(t *testing.T) {
	t.Run("children files", func(t *testing.T) { testReaperNeverSteals(t) })
	t.Run("proc snapshot", func(t *testing.T) {
		listOwnChildren = func() ([]int, bool) { return nil, false }
		defer func() { listOwnChildren = ownChildren }()
		testReaperNeverSteals(t)
	})
}

func testReaperNeverSteals(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	// One attempt first, so the pidfd check of the first spawn has run.
	if res := start(t, e, Request{RunID: "reaper-first", Spec: Spec{ShellCommand: "true"}}).Wait(); res.Status != "succeeded" {
		t.Fatalf("first attempt = %+v", res)
	}
	if !reaper.active {
		t.Fatalf("not a child subreaper: %v", reaper.err)
	}

	direct := exec.Command("/bin/sh", "-c", "exit 7")
	if err := direct.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitNoReap(direct.Process.Pid); err != nil {
		t.Fatal(err)
	}

	marked := orphan(t, []string{"QL3_RUN_ID=reaper-run", "QL3_ATTEMPT=1"})
	if procs, err := attemptProcesses("reaper-run", 1, -1); err != nil || len(procs) != 1 || procs[0].PID != marked.PID {
		t.Fatalf("attemptProcesses = %+v, %v; want the marked orphan %d", procs, err, marked.PID)
	}
	unmarked := orphan(t, nil)
	killToZombie(t, marked.PID)
	killToZombie(t, unmarked.PID)

	// Without pidfd tracking only the orphan seen alive with a marker is
	// provably ours.
	restore := setPidfdTracked(false)
	n := reapAdopted()
	restore()
	if n != 1 || !reaped(marked) || reaped(unmarked) {
		t.Fatalf("without pidfds: reaped %d, marked reaped %v, unmarked reaped %v; want 1, true, false", n, reaped(marked), reaped(unmarked))
	}
	// With it (this kernel and Go), the unmarked zombie holds no pidfd: an
	// orphan, reaped; the os/exec child holds one and is left alone.
	if !reaper.pidfdTracked {
		t.Logf("os/exec keeps no pidfds here: unmarked orphans stay zombies (ADR 0017)")
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(unmarked.PID, &ws, 0, nil) // tidy up by hand
	} else if n := reapAdopted(); n != 1 || !reaped(unmarked) {
		t.Fatalf("with pidfds: reaped %d, unmarked reaped %v; want 1, true", n, reaped(unmarked))
	}

	// Adopted entries of processes that are gone are forgotten.
	reaper.mu.Lock()
	_, stale := reaper.adopted[marked.PID]
	reaper.mu.Unlock()
	if stale {
		t.Fatalf("reaped orphan %d still remembered as adopted", marked.PID)
	}

	err := direct.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 7 {
		t.Fatalf("os/exec Wait = %v; want exit status 7 (the reaper must not steal it)", err)
	}
}

func TestFdinfoPid(t *testing.T) {
	for _, tc := range []struct {
		info string
		pid  int
		ok   bool
	}{
		{"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nPid:\t4242\nNSpid:\t4242\n", 4242, true},
		{"Pid:\t7", 7, true},
		{"Pid:\t-1\n", -1, false}, // a pidfd of a reaped process
		{"pos:\t0\nflags:\t02\n", 0, false},
		{"Pid:\tabc\n", 0, false},
		{"", 0, false},
	} {
		pid, ok := fdinfoPid([]byte(tc.info))
		if ok != tc.ok || (ok && pid != tc.pid) {
			t.Errorf("fdinfoPid(%q) = %d, %v; want %d, %v", tc.info, pid, ok, tc.pid, tc.ok)
		}
	}
}

// BenchmarkReapPass is the cost of one reap pass with nothing to reap (a
// /proc snapshot): what each SIGCHLD costs per running attempt. Report it
// as a ratio to BenchmarkReadOwnStat, one /proc/<pid>/stat read, in the
// same run.
func BenchmarkReapPass(b *testing.B) {
	if err := becomeSubreaper(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		reapAdopted()
	}
}

// BenchmarkReapPassLeaderZombie is one reap pass while an attempt leader
// has exited and waits for its os/exec Wait (a waitable child that is not
// ours to reap): the pass every SIGCHLD causes while short attempts end.
// Report it as a ratio to BenchmarkReapPass in the same run.
func BenchmarkReapPassLeaderZombie(b *testing.B) {
	if err := becomeSubreaper(); err != nil {
		b.Fatal(err)
	}
	leader := exec.Command("/bin/true")
	if err := leader.Start(); err != nil {
		b.Fatal(err)
	}
	addLeader(leader.Process.Pid)
	defer func() { removeLeader(leader.Process.Pid); _ = leader.Wait() }()
	if err := waitNoReap(leader.Process.Pid); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		reapAdopted()
	}
}

// BenchmarkAttemptScan is the cost of one scan for an attempt's processes
// (snapshot, descendants, marker reads): what each stop step and the end
// of every attempt cost.
func BenchmarkAttemptScan(b *testing.B) {
	if err := becomeSubreaper(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := attemptProcesses("bench-run", 1, -1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadOwnStat(b *testing.B) {
	pid := os.Getpid()
	for b.Loop() {
		if _, err := readProcStat(pid); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAnyChildWaitable(t *testing.T) {
	child := exec.Command("sleep", "100")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	if anyChildWaitable() {
		t.Fatal("a running child reported waitable")
	}
	killToZombie(t, child.Process.Pid)
	if !anyChildWaitable() {
		t.Fatal("an exited, unreaped child not reported waitable")
	}
	_ = child.Wait() // the peek must not have reaped it
	if child.ProcessState == nil || child.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("Wait after the peek: state %v; want killed", child.ProcessState)
	}
	if anyChildWaitable() {
		t.Fatal("waitable after the child was reaped")
	}
}

// BenchmarkAttemptTrue runs `true` as an attempt, start to Done (spawn,
// supervise, end-of-attempt scan, reap check, drain); compare it with
// BenchmarkExecTrue, the bare os/exec spawn and wait, in the same run.
func BenchmarkAttemptTrue(b *testing.B) {
	e, err := New(Config{WorkRoot: b.TempDir(), MaxConcurrent: 1})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		slot, _ := e.TryAcquire()
		h, err := e.Start(slot, Request{RunID: "bench", Attempt: 1, TaskID: "t", Spec: Spec{Argv: []string{"/bin/true"}}})
		if err != nil {
			b.Fatal(err)
		}
		if res := h.Wait(); res.Status != "succeeded" {
			b.Fatal(res)
		}
	}
	e.Wait()
}

func BenchmarkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzFdinfoPid: any fdinfo text parses without panicking, and a pid is
// reported only when a "Pid:" line holds a positive number.
func FuzzFdinfoPid(f *testing.F) {
	f.Add([]byte("pos:\t0\nflags:\t02000002\nPid:\t4242\nNSpid:\t4242\n"))
	f.Add([]byte("Pid:\t-1\n"))
	f.Add([]byte("Pid:"))
	f.Fuzz(func(t *testing.T, info []byte) {
		pid, ok := fdinfoPid(info)
		if ok && (pid <= 0 || !strings.Contains(string(info), "Pid:")) {
			t.Fatalf("fdinfoPid(%q) = %d, true", info, pid)
		}
		if ok && !strings.Contains(string(info), strconv.Itoa(pid)) {
			t.Fatalf("fdinfoPid(%q) = %d: not in the text", info, pid)
		}
	})
}
