//go:build linux

package executor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/worker/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// output is a concurrency-safe buffer that lets a test wait for content.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor blocks until the output matches re (or the attempt ended) and
// returns the first submatch.
func (o *output) waitFor(t *testing.T, re *regexp.Regexp, done <-chan struct{}) string {
	t.Helper()
	for {
		o.mu.Lock()
		m := re.FindStringSubmatch(o.buf.String())
		ch := o.changed
		o.mu.Unlock()
		if m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case <-ch:
		case <-done:
			t.Fatalf("attempt ended before output matched %v; output %q", re, o.String())
		}
	}
}

// waitTimers blocks until the fake clock has n armed timers.
func waitTimers(t *testing.T, f *clock.Fake, n int) {
	t.Helper()
	for {
		ch := f.Changed()
		if f.Waiters() == n {
			return
		}
		<-ch
	}
}

func newTestExecutor(t *testing.T, mod func(*Config)) (*Executor, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(epoch)
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/test", "QL3_ADMIN_TOKEN": "secret", "AWS_SECRET_ACCESS_KEY": "secret"}
	cfg := Config{
		WorkRoot:  filepath.Join(t.TempDir(), "work"),
		Clock:     fake,
		KillGrace: 10 * time.Second,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	return e, fake
}

func start(t *testing.T, e *Executor, req Request) *Handle {
	t.Helper()
	slot, ok := e.TryAcquire()
	if !ok {
		t.Fatal("no free slot")
	}
	if req.RunID == "" {
		req.RunID = "run-1"
	}
	if req.Attempt == 0 {
		req.Attempt = 1
	}
	if req.TaskID == "" {
		req.TaskID = "task-1"
	}
	h, err := e.Start(slot, req)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

// gone reports whether pid no longer runs (absent or a zombie).
func gone(pid int) bool {
	st, err := readProcStat(pid)
	return err != nil || st.State == 'Z' || st.State == 'X'
}

func TestArgvSucceedsWithEnvironmentAndWorkDir(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{
		RunID: "r1", Attempt: 2, TaskID: "t1", TaskRevision: 3, TaskName: "backup",
		ScheduledFor: time.Date(2026, 3, 1, 11, 0, 0, 0, time.FixedZone("X", 3600)),
		Spec:         Spec{Argv: []string{"sh", "-c", "env; pwd"}, Env: map[string]string{"GREETING": "hi"}},
		Output:       out,
	})
	res := h.Wait()
	if res.Status != run.AttemptSucceeded || res.ErrorClass != "" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("result = %+v; output %s", res, out)
	}
	got := out.String()
	for _, want := range []string{
		"QL3_RUN_ID=r1\n", "QL3_ATTEMPT=2\n", "QL3_TASK_ID=t1\n", "QL3_TASK_REVISION=3\n",
		"QL3_TASK_NAME=backup\n", "QL3_SCHEDULED_FOR=2026-03-01T10:00:00Z\n", "GREETING=hi\n", "HOME=/home/test\n",
		filepath.Join(e.cfg.WorkRoot, "t1") + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, leak := range []string{"QL3_ADMIN_TOKEN", "AWS_SECRET_ACCESS_KEY"} {
		if strings.Contains(got, leak) {
			t.Errorf("server variable %s leaked into the task", leak)
		}
	}
	if !res.StartedAt.Equal(epoch) || !res.FinishedAt.Equal(epoch) {
		t.Errorf("times %v..%v, want the fake clock", res.StartedAt, res.FinishedAt)
	}
	if e.Running() != 0 {
		t.Error("attempt still registered")
	}
}

func TestExitCodesAndSignals(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		status run.AttemptStatus
		class  run.ErrorClass
		code   int // -1: no exit code
		signal string
	}{
		{"exit 0", Spec{ShellCommand: "exit 0"}, run.AttemptSucceeded, "", 0, ""},
		{"exit 3", Spec{ShellCommand: "exit 3"}, run.AttemptFailed, run.ErrorProcessExit, 3, ""},
		{"bash", Spec{ShellCommand: "[[ 1 == 1 ]] && exit 4", Shell: "/bin/bash"}, run.AttemptFailed, run.ErrorProcessExit, 4, ""},
		{"self kill", Spec{ShellCommand: "kill -KILL $$"}, run.AttemptFailed, run.ErrorProcessExit, -1, "killed"},
		{"argv false", Spec{Argv: []string{"false"}}, run.AttemptFailed, run.ErrorProcessExit, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestExecutor(t, nil)
			res := start(t, e, Request{Spec: tc.spec}).Wait()
			if res.Status != tc.status || res.ErrorClass != tc.class || res.Signal != tc.signal {
				t.Fatalf("result = %+v", res)
			}
			if tc.code < 0 && res.ExitCode != nil || tc.code >= 0 && (res.ExitCode == nil || *res.ExitCode != tc.code) {
				t.Fatalf("exit code = %v, want %d", res.ExitCode, tc.code)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"missing file", Spec{Argv: []string{"/nonexistent/ql3-test"}}},
		{"not in PATH", Spec{Argv: []string{"ql3-no-such-program"}}},
		{"not executable", Spec{Argv: []string{"/etc/hostname"}}},
		{"missing workdir", Spec{ShellCommand: "true", WorkDir: "/nonexistent/dir"}},
		{"escaping workdir", Spec{ShellCommand: "true", WorkDir: "../../etc"}},
		{"bad shell", Spec{ShellCommand: "true", Shell: "/bin/zsh"}},
		{"reserved env", Spec{ShellCommand: "true", Env: map[string]string{"QL3_RUN_ID": "x"}}},
		{"both", Spec{ShellCommand: "true", Argv: []string{"true"}}},
		{"neither", Spec{}},
	}
	e, _ := newTestExecutor(t, func(c *Config) { c.MaxConcurrent = 1 })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slot, ok := e.TryAcquire()
			if !ok {
				t.Fatal("slot leaked by an earlier failed start")
			}
			_, err := e.Start(slot, Request{RunID: "r", Attempt: 1, TaskID: "t", Spec: tc.spec})
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *StartError", err)
			}
		})
	}
}

func TestConcurrencyLimitAndDuplicateStart(t *testing.T) {
	e, _ := newTestExecutor(t, func(c *Config) { c.MaxConcurrent = 2 })
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{ShellCommand: "echo up; exec sleep 1000"}, Output: out})
	out.waitFor(t, regexp.MustCompile("up"), h.Done())
	slot, ok := e.TryAcquire()
	if !ok {
		t.Fatal("second slot not available")
	}
	if _, ok := e.TryAcquire(); ok {
		t.Fatal("third slot granted with MaxConcurrent=2")
	}
	if _, err := e.Start(slot, Request{RunID: "run-1", Attempt: 1, TaskID: "t", Spec: Spec{ShellCommand: "true"}}); errs.Code(err) != errs.Conflict {
		t.Fatalf("duplicate start: %v", err)
	}
	// The failed start gave its slot back.
	slot2, ok := e.TryAcquire()
	if !ok {
		t.Fatal("slot not returned after the refused start")
	}
	slot2.Release()
	slot2.Release() // idempotent
	if !e.Cancel("run-1", 1, "test") {
		t.Fatal("Cancel did not find the attempt")
	}
	h.Wait()
	for i := 0; i < 2; i++ {
		if _, ok := e.TryAcquire(); !ok {
			t.Fatalf("slot %d not freed after the attempt ended", i)
		}
	}
}

// grandchildScript starts a grandchild that ignores SIGTERM and prints its
// pid, then waits.
const grandchildScript = `(trap '' TERM; exec sleep 1000) & echo "grandchild=$!"; wait`

func TestTimeoutKillsWholeGroupIncludingGrandchild(t *testing.T) {
	e, fake := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{ShellCommand: grandchildScript, Timeout: time.Minute}, Output: out})
	gc, _ := strconv.Atoi(out.waitFor(t, regexp.MustCompile(`grandchild=(\d+)`), h.Done()))
	if gone(gc) {
		t.Fatalf("grandchild %d not running before the timeout", gc)
	}
	waitTimers(t, fake, 1) // the timeout timer
	fake.Advance(time.Minute)
	res := h.Wait()
	if res.Status != run.AttemptTimedOut || res.ErrorClass != run.ErrorTimeout {
		t.Fatalf("result = %+v", res)
	}
	// The shell died of SIGTERM; the grandchild ignored it and was killed by
	// the group SIGKILL after the leader exited, without waiting for the grace.
	if !gone(gc) {
		t.Fatalf("grandchild %d survived the attempt", gc)
	}
	if res.Signal != "terminated" {
		t.Errorf("leader signal = %q, want terminated", res.Signal)
	}
}

func TestTimeoutEscalatesToSIGKILL(t *testing.T) {
	e, fake := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{ShellCommand: `trap '' TERM; echo ready; while :; do sleep 1; done`, Timeout: time.Second}, Output: out})
	out.waitFor(t, regexp.MustCompile("ready"), h.Done())
	waitTimers(t, fake, 1)
	fake.Advance(time.Second) // timeout → SIGTERM (ignored), grace timer armed
	waitTimers(t, fake, 1)
	select {
	case <-h.Done():
		t.Fatal("attempt ended although it ignores SIGTERM and the grace has not elapsed")
	default:
	}
	pid := h.Identity().PID
	fake.Advance(10 * time.Second) // grace → SIGKILL
	res := h.Wait()
	if res.Status != run.AttemptTimedOut || res.Signal != "killed" || !gone(pid) {
		t.Fatalf("result = %+v, leader gone=%v", res, gone(pid))
	}
}

func TestCancel(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{RunID: "rc", Attempt: 1, Spec: Spec{ShellCommand: grandchildScript}, Output: out})
	gc, _ := strconv.Atoi(out.waitFor(t, regexp.MustCompile(`grandchild=(\d+)`), h.Done()))
	if e.Cancel("rc", 2, "wrong attempt") {
		t.Fatal("Cancel of an unknown attempt reported success")
	}
	if !e.Cancel("rc", 1, "cancelled from the API") {
		t.Fatal("Cancel did not find the attempt")
	}
	res := h.Wait()
	if res.Status != run.AttemptCancelled || res.ErrorClass != run.ErrorCancelledByUser || res.Message != "cancelled from the API" {
		t.Fatalf("result = %+v", res)
	}
	if !gone(gc) {
		t.Fatalf("grandchild %d survived the cancel", gc)
	}
	// A Stop after the end changes nothing.
	h.Stop(run.AttemptLost, run.ErrorWorkerLost, "late")
	if h.Wait().Status != run.AttemptCancelled {
		t.Fatal("late Stop changed the result")
	}
}

func TestLeftoverBackgroundProcessKilledAfterSuccess(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{ShellCommand: `sleep 1000 & echo "bg=$!"`}, Output: out})
	res := h.Wait()
	bg, _ := strconv.Atoi(regexp.MustCompile(`bg=(\d+)`).FindStringSubmatch(out.String())[1])
	if res.Status != run.AttemptSucceeded || !gone(bg) {
		t.Fatalf("result = %+v, background process gone=%v", res, gone(bg))
	}
}

// TestOutputCapNeverBlocksChild writes far more than the cap through a
// CapWriter into a file: the child finishes, the file keeps exactly the cap
// and the summary records the truncation. (edge/runner repeats this through
// the edge's log store.)
func TestOutputCapNeverBlocksChild(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewCapWriter(f, 1024)
	// 4 MiB of output, 16 times the pipe buffer: would block without draining.
	h := start(t, e, Request{Spec: Spec{ShellCommand: `head -c 4194304 /dev/zero; echo done >&2`}, Output: w})
	res := h.Wait()
	sum := w.Summary()
	if res.Status != run.AttemptSucceeded || sum.Bytes != 1024 || sum.BytesSeen != 4194304+5 || !sum.Truncated || sum.Err != nil {
		t.Fatalf("result %+v, summary %+v", res, sum)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 1024 {
		t.Fatalf("file size %v, %v; want 1024", st.Size(), err)
	}
}

func TestIdentityAndAlive(t *testing.T) {
	self, err := ReadIdentity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !self.Alive() || self.StartTicks == 0 || self.BootID == "" {
		t.Fatalf("own identity %+v not alive", self)
	}
	for name, id := range map[string]Identity{
		"other start time": {PID: self.PID, PGID: self.PGID, StartTicks: self.StartTicks + 1, BootID: self.BootID},
		"other boot":       {PID: self.PID, PGID: self.PGID, StartTicks: self.StartTicks, BootID: "00000000-0000-0000-0000-000000000000"},
		"no pid":           {},
	} {
		if id.Alive() {
			t.Errorf("%s: %+v reported alive", name, id)
		}
	}
	back, err := ParseIdentity(self.String())
	if err != nil || back != self {
		t.Fatalf("ParseIdentity(%q) = %+v, %v", self.String(), back, err)
	}
}

// TestTerminateOrphans simulates a child left behind by a crashed ql3-edge or ql3-worker:
// a process group started outside the executor with the attempt's markers,
// whose grandchild ignores SIGTERM.
func TestTerminateOrphans(t *testing.T) {
	// The search is machine-wide: the id is this process's own, so the same
	// test running in another process (another checkout, -count) is neither
	// found nor killed.
	runID := "orphan-run-" + strconv.Itoa(os.Getpid())
	e, fake := newTestExecutor(t, func(c *Config) { c.KillGrace = time.Second })
	out := newOutput()
	cmd := exec.Command("/bin/sh", "-c", `trap '' TERM; sleep 1000 & echo "gc=$!"; wait`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "QL3_RUN_ID=" + runID, "QL3_ATTEMPT=3"}
	cmd.Stdout = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	gc, _ := strconv.Atoi(out.waitFor(t, regexp.MustCompile(`gc=(\d+)`), waited))
	leader, err := ReadIdentity(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	// Another attempt's marker finds nothing.
	if procs, err := FindProcesses(runID, 4, Identity{}); err != nil || len(procs) != 0 {
		t.Fatalf("FindProcesses for another attempt = %v, %v", procs, err)
	}
	procs, err := FindProcesses(runID, 3, leader)
	if err != nil || len(procs) != 2 {
		t.Fatalf("FindProcesses = %+v, %v; want leader and grandchild", procs, err)
	}

	// Drive the fake clock while TerminateOrphans polls.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			ch := fake.Changed()
			if fake.Waiters() > 0 {
				fake.Advance(orphanPoll)
				continue
			}
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	rep, err := e.TerminateOrphans(context.Background(), runID, 3, leader)
	if err != nil || rep.Found != 2 || rep.Remaining != 0 {
		t.Fatalf("TerminateOrphans = %+v, %v", rep, err)
	}
	<-waited
	if !gone(gc) || !gone(leader.PID) {
		t.Fatal("orphan processes survived")
	}
	// Nothing left: a second call finds nothing.
	if rep, err := e.TerminateOrphans(context.Background(), runID, 3, leader); err != nil || rep.Found != 0 {
		t.Fatalf("second TerminateOrphans = %+v, %v", rep, err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, "executor.workRoot"},
		{Config{WorkRoot: "w", MaxConcurrent: HardMaxConcurrent + 1}, "executor.maxConcurrent"},
		{Config{WorkRoot: "w", KillGrace: -1}, "executor.killGrace"},
		{Config{WorkRoot: "w", DrainTimeout: -1}, "executor.drainTimeout"},
	} {
		if tc.cfg.WorkRoot != "" {
			tc.cfg.WorkRoot = filepath.Join(t.TempDir(), tc.cfg.WorkRoot)
		}
		if _, err := New(tc.cfg); errs.Field(err) != tc.field {
			t.Errorf("New(%+v) = %v, want field %s", tc.cfg, err, tc.field)
		}
	}
}
