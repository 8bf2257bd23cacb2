//go:build linux

package runner

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/executor"
)

// crashMidAttempt plays the part of a ql3-edge process that claimed a run,
// spawned its attempt and died: the store says the attempt is running with
// the given process; nothing in this process supervises it.
func (e *env) crashMidAttempt(r edge.Run, pid int) edge.AttemptRef {
	e.t.Helper()
	ctx := context.Background()
	claim, err := e.store.ClaimRun(ctx, r.ID, r.Version, e.clock.Now().UnixMilli())
	if err != nil {
		e.t.Fatal(err)
	}
	ref := edge.AttemptRef{RunID: r.ID, Number: claim.Attempt.Number}
	if _, err := e.store.MarkAttemptRunning(ctx, ref, edge.AttemptStart{PID: pid, PGID: pid, StartedAtMs: e.clock.Now().UnixMilli()}); err != nil {
		e.t.Fatal(err)
	}
	return ref
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestRecoveryDeadProcessBecomesLostAndRetries(t *testing.T) {
	e := newEnv(t)
	m := newMarker(t)
	task := e.task("recover", shellTask(m.cmd(), func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 2, RetryOnLost: true}
	}))
	r := e.runNow(task.ID)
	ref := e.crashMidAttempt(r, deadPID(t))

	rep, err := e.r.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep != (RecoveryReport{InFlight: 1, Recorded: 1}) {
		t.Fatalf("report = %+v", rep)
	}
	got := e.getRun(r.ID)
	if got.Status != run.RunRetryWait || got.AttemptCount != 2 {
		t.Fatalf("run after recovery = %s attempt %d, want retry_wait attempt 2", got.Status, got.AttemptCount)
	}
	lost := e.attempts(r.ID)[ref.Number-1]
	if lost.Status != run.AttemptLost || lost.ErrorClass != run.ErrorWorkerLost || !strings.Contains(lost.Message, "gone") {
		t.Fatalf("attempt 1 = %+v", lost)
	}
	e.start()
	e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	if lines := m.lines(t); len(lines) != 1 || lines[0] != r.ID+"/2" {
		t.Fatalf("executions = %v, want only attempt 2", lines)
	}
	if ev := e.events(r.ID); ev != "created queued dispatched starting running lost retry_scheduled queued dispatched starting running succeeded" {
		t.Fatalf("events = %s", ev)
	}
}

func TestRecoveryWithoutRetryOnLostLeavesRunLost(t *testing.T) {
	e := newEnv(t)
	task := e.task("noretry", shellTask("true", func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 3, RetryOnLost: false}
	}))
	r := e.runNow(task.ID)
	e.crashMidAttempt(r, deadPID(t))
	if _, err := e.r.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.getRun(r.ID)
	if got.Status != run.RunLost || got.AttemptCount != 1 || got.ErrorClass != run.ErrorWorkerLost {
		t.Fatalf("run = %+v", got)
	}
}

// TestRecoveryTerminatesLiveOrphan: the crashed edge's attempt is still
// running (with a grandchild ignoring SIGTERM). Recovery must kill both
// before the run is retried, so the task never runs twice at once.
func TestRecoveryTerminatesLiveOrphan(t *testing.T) {
	e := newEnv(t)
	m := newMarker(t)
	task := e.task("orphan", shellTask(m.cmd(), func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 2, RetryOnLost: true}
	}))
	r := e.runNow(task.ID)

	out := newOutput()
	orphan := exec.Command("/bin/sh", "-c", `(trap '' TERM; exec sleep 1000) & echo "gc=$!"; wait`)
	orphan.Env = []string{"PATH=" + os.Getenv("PATH"), "QL3_RUN_ID=" + r.ID, "QL3_ATTEMPT=1"}
	orphan.Stdout = out
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { orphan.Wait(); close(reaped) }()
	out.waitContains("\n")
	gc, _ := strconv.Atoi(regexp.MustCompile(`gc=(\d+)`).FindStringSubmatch(out.String())[1])

	ref := e.crashMidAttempt(r, orphan.Process.Pid)
	id, err := executor.ReadIdentity(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.r.writeIdentity(ref, id); err != nil {
		t.Fatal(err)
	}

	// Recovery polls on the fake clock: keep it moving while it waits.
	stopClock := e.driveClock()
	rep, err := e.r.Recover(context.Background())
	stopClock()
	if err != nil {
		t.Fatal(err)
	}
	if rep != (RecoveryReport{InFlight: 1, Terminated: 1, Recorded: 1}) {
		t.Fatalf("report = %+v", rep)
	}
	<-reaped
	if !gone(orphan.Process.Pid) || !gone(gc) {
		t.Fatal("orphan processes survived recovery")
	}
	if _, err := os.Stat(e.r.identityPath(ref)); !os.IsNotExist(err) {
		t.Fatalf("identity file left behind: %v", err)
	}
	lost := e.attempts(r.ID)[0]
	if lost.Status != run.AttemptLost || !strings.Contains(lost.Message, "terminated") {
		t.Fatalf("attempt 1 = %+v", lost)
	}
	if got := e.getRun(r.ID); got.Status != run.RunRetryWait || got.AttemptCount != 2 {
		t.Fatalf("run = %s attempt %d, want retry_wait attempt 2", got.Status, got.AttemptCount)
	}
}

// TestRecoveryStartingWithoutPID covers a crash between ClaimRun and
// MarkAttemptRunning: the store knows no pid, the environment marker still
// finds the process.
func TestRecoveryStartingWithoutPID(t *testing.T) {
	e := newEnv(t)
	task := e.task("starting", shellTask("true", nil))
	r := e.runNow(task.ID)
	if _, err := e.store.ClaimRun(context.Background(), r.ID, r.Version, e.clock.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", "1000")
	orphan.Env = []string{"QL3_RUN_ID=" + r.ID, "QL3_ATTEMPT=1"}
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { orphan.Wait(); close(reaped) }()
	stopClock := e.driveClock()
	rep, err := e.r.Recover(context.Background())
	stopClock()
	if err != nil || rep.Terminated != 1 {
		t.Fatalf("Recover = %+v, %v", rep, err)
	}
	<-reaped
	if got := e.getRun(r.ID); got.Status != run.RunLost {
		t.Fatalf("run = %s, want lost", got.Status)
	}
}

// TestQueuedRunBeforeCrashExecutedOnce: runs admitted before a crash are
// executed exactly once by the next process, even if it restarts again.
func TestQueuedRunBeforeCrashExecutedOnce(t *testing.T) {
	e := newEnv(t)
	m := newMarker(t)
	task := e.task("queued", shellTask(m.cmd(), func(c *spec.Command) { c.Concurrency = spec.ConcurrencyAllow }))
	runs := []edge.Run{e.runNow(task.ID), e.runNow(task.ID), e.runNow(task.ID)}
	e.start()
	for _, r := range runs {
		e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	}
	e.stop()
	// A second life over the same data finds nothing to do.
	e.openRunner()
	rep, err := e.r.Recover(context.Background())
	if err != nil || rep.InFlight != 0 {
		t.Fatalf("second recovery = %+v, %v", rep, err)
	}
	e.start()
	e.stop()
	lines := m.lines(t)
	if len(lines) != 3 {
		t.Fatalf("executions = %v, want 3", lines)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("run executed twice: %v", lines)
		}
		seen[l] = true
	}
}

func TestNewValidates(t *testing.T) {
	e := newEnv(t)
	base := Config{Store: e.store, Executor: e.exec, Logs: e.logs, StateDir: t.TempDir()}
	for _, tc := range []struct {
		mod   func(*Config)
		field string
	}{
		{func(c *Config) { c.Store = nil }, "runner.store"},
		{func(c *Config) { c.Executor = nil }, "runner.executor"},
		{func(c *Config) { c.Logs = nil }, "runner.logs"},
		{func(c *Config) { c.StateDir = "" }, "runner.stateDir"},
		{func(c *Config) { c.PollInterval = -1 }, "runner.pollInterval"},
		{func(c *Config) { c.BatchSize = edge.MaxPageSize + 1 }, "runner.batchSize"},
	} {
		cfg := base
		tc.mod(&cfg)
		if _, err := New(cfg); errs.Field(err) != tc.field {
			t.Errorf("New: %v, want field %s", err, tc.field)
		}
	}
}

func TestDecodeIdentityFile(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"12:12:345:boot\n", true},
		{"12:12:345:boot", false}, // torn: no newline
		{"", false},
		{"x\n", false},
	} {
		if _, err := decodeIdentityFile([]byte(tc.in)); (err == nil) != tc.ok {
			t.Errorf("decodeIdentityFile(%q) err = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func FuzzDecodeIdentityFile(f *testing.F) {
	f.Add([]byte("12:12:345:6f1c\n"))
	f.Add([]byte("1:1:0:\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := decodeIdentityFile(data)
		if err != nil {
			return
		}
		back, err := decodeIdentityFile([]byte(id.String() + "\n"))
		if err != nil || back != id {
			t.Fatalf("round trip of %+v: %+v, %v", id, back, err)
		}
	})
}
