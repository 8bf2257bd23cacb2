package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
	"github.com/ql3/ql3/worker/internal/fakeingress"
	"github.com/ql3/ql3/worker/journal"
)

// execRunID names the Runs these tests execute for real. Marker searches
// (executor.FindProcesses, crash recovery) are machine-wide, so the id
// carries this process's pid: the same tests running in another process
// (another checkout, a parallel package) neither count nor kill ours.
var execRunID = "exec-run-" + strconv.Itoa(os.Getpid())

func newExecRunner(t *testing.T) agent.Runner {
	t.Helper()
	e, err := executor.New(executor.Config{WorkRoot: t.TempDir(), MaxConcurrent: 4,
		KillGrace: 200 * time.Millisecond, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	return agent.ExecRunner{E: e}
}

// startedGroup drives until run id is started and journaled, and returns
// the process group id of its leader.
func (h *harness) startedGroup(id string) int {
	h.t.Helper()
	var pgid int
	ok := h.drive(time.Second, 100, func() bool {
		if h.srvRun(id).State != "started" {
			return false
		}
		entries, _, err := h.j.Entries()
		if err != nil {
			return false
		}
		for _, e := range entries {
			if e.State == journal.Started && e.Process != "" {
				ident, err := executor.ParseIdentity(e.Process)
				if err == nil {
					pgid = ident.PGID
					return true
				}
			}
		}
		return false
	})
	if !ok {
		h.t.Fatalf("%s never started", id)
	}
	return pgid
}

// groupAlive reports whether any process of group pgid is alive.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// realWait bounds the real-time waits on real processes below: it only
// ends a hung test (a loaded 2-core CI box running other packages at once
// can be slow), it is never a pass condition.
const realWait = 30 * time.Second

// waitFile waits, in real time and bounded, for a real process to create path.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(realWait)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not created within %v", path, realWait)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitGroupGone waits (real time, bounded) for a signalled group to die:
// there is no event for it, the kernel tears it down on its own time.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(realWait)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still alive %v after it was stopped", pgid, realWait)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Heartbeats black-holed: the worker stops the process group on its own,
// before its local view of the lease expires, and sends no completion.
func TestSelfFenceKillsGroupBeforeLeaseExpiry(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	h.cfg.Cadence = 250 * time.Millisecond
	fenced := make(chan string, 8)
	h.cfg.Hooks.Fenced = func(_, reason string) { fenced <- reason }
	h.srv.AddRun(execRunID, "sleep 300 & sleep 300; wait", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	if !groupAlive(pgid) {
		t.Fatal("the task's group is not running")
	}
	h.srv.With(func(s *fakeingress.Server) { s.BlackHole[protocol.PathSessionHeartbeat] = true })
	if !h.drive(250*time.Millisecond, 2000, func() bool { return len(fenced) > 0 }) {
		t.Fatal("the worker never fenced the attempt")
	}
	fencedAt := h.clk.Now()
	waitGroupGone(t, pgid)
	r := h.srvRun(execRunID)
	localExpiry := r.Expiry.Add(-time.Second) // the worker's own, conservative view
	if !fencedAt.Before(localExpiry) {
		t.Fatalf("fenced at %s, not before the local lease expiry %s", fencedAt, localExpiry)
	}
	if reason := <-fenced; reason != "lease_lapsed" && reason != "session_lease_expired" {
		t.Fatalf("fence reason %q", reason)
	}
	if r.Completions != 0 {
		t.Fatalf("a fenced attempt sent %d completions", r.Completions)
	}
	t.Logf("fenced %s before the authority's expiry (local expiry margin %s)", r.Expiry.Sub(fencedAt), localExpiry.Sub(fencedAt))
}

// The authority's cancel stops the whole group (grandchildren included)
// and is reported as a cancelled completion after the logs.
func TestCancelControlStopsGroupAndReportsCancelled(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	// The task says when its output is written, so the cancel never lands
	// before the shell has run its echo (the log is asserted below).
	ready := filepath.Join(t.TempDir(), "ready")
	h.srv.AddRun(execRunID, "echo started; : > "+ready+"; sleep 300 & sleep 300; wait", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	waitFile(t, ready)
	h.srv.With(func(s *fakeingress.Server) { s.Runs()[0].Cancel = true })
	if !h.drive(time.Second, 60, func() bool { return h.srvRun(execRunID).CancelSent }) {
		t.Fatal("the cancel was never sent")
	}
	waitGroupGone(t, pgid) // real processes end in real time
	if !h.driveUntil(time.Second, func() bool { return h.srvRun(execRunID).Completion != nil }) {
		t.Fatal("no completion after the cancel")
	}
	r := h.srvRun(execRunID)
	if r.Completion.Status != "cancelled" || r.Completion.ErrorClass != "cancelled_by_user" {
		t.Fatalf("completion %s/%s, want cancelled/cancelled_by_user", r.Completion.Status, r.Completion.ErrorClass)
	}
	if r.CompletedEarly || string(r.Log) != "started\n" {
		t.Fatalf("log %q early=%v", r.Log, r.CompletedEarly)
	}
}

// The second signal (ctx cancelled after Drain) kills the children and
// returns at once.
func TestSecondSignalKillsChildren(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	h.srv.AddRun(execRunID, "sleep 300 & sleep 300; wait", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	h.a.Drain()
	h.drive(time.Second, 3, func() bool { return false })
	if !groupAlive(pgid) {
		t.Fatal("the first signal must let running work continue")
	}
	err := h.stop() // the second signal
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	waitGroupGone(t, pgid)
}

// The session stays healthy but one lease is no longer renewed: the fencer
// stops that group on its own before the lease's local expiry.
func TestFencerStopsUnrenewedLease(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	h.cfg.Cadence = 250 * time.Millisecond
	fenced := make(chan string, 8)
	h.cfg.Hooks.Fenced = func(_, reason string) { fenced <- reason }
	h.srv.AddRun(execRunID, "sleep 300", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	h.srv.With(func(s *fakeingress.Server) { s.Runs()[0].Silent = true })
	if !h.drive(250*time.Millisecond, 2000, func() bool { return len(fenced) > 0 }) {
		t.Fatal("the worker never fenced the attempt")
	}
	fencedAt := h.clk.Now()
	waitGroupGone(t, pgid)
	r := h.srvRun(execRunID)
	if reason := <-fenced; reason != "lease_lapsed" {
		t.Fatalf("fence reason %q, want lease_lapsed", reason)
	}
	if !fencedAt.Before(r.Expiry.Add(-time.Second)) {
		t.Fatalf("fenced at %s, not before the local lease expiry %s", fencedAt, r.Expiry.Add(-time.Second))
	}
	if _, gen, _ := sessionOf(h); gen != 1 {
		t.Fatalf("the session was replaced (generation %d); only the lease should be fenced", gen)
	}
}

func sessionOf(h *harness) (id string, gen int64, st string) {
	h.srv.With(func(s *fakeingress.Server) {
		var ss interface{ String() string }
		_ = ss
		i, g, status := s.Session()
		id, gen, st = i, g, string(status)
	})
	return
}

// A crash right after the spawn was journaled: the restarted worker never
// spawns the attempt again, terminates its marked survivors and drops the
// record, leaving the lease to lapse.
func TestRestartTerminatesSurvivorsAndNeverRespawns(t *testing.T) {
	runner := newExecRunner(t)
	h := newHarness(t, runner)
	h.srv.AddRun(execRunID, "sleep 300 & sleep 300; wait", 600_000)
	h.startCrashingAt("entry.started:dirsync")
	j, err := journal.Open(h.state, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, _ := j.Entries()
	j.Close()
	if len(entries) != 1 || entries[0].State != journal.Started {
		t.Fatalf("journal after the crash: %+v", entries)
	}
	ident, err := executor.ParseIdentity(entries[0].Process)
	if err != nil || !groupAlive(ident.PGID) {
		t.Fatalf("the attempt's group should have survived the crash (%v)", err)
	}
	before := len(h.requestsTo(protocol.PathLeaseAck))
	h.start(nil)
	if !h.driveUntil(time.Second, func() bool { return journalEmptyWhileRunning(h) }) {
		t.Fatal("the interrupted record was not settled")
	}
	waitGroupGone(t, ident.PGID)
	if n := len(h.requestsTo(protocol.PathLeaseAck)); n != before {
		t.Fatalf("the restarted worker acked the attempt again (%d acks after the restart)", n-before)
	}
	if c := h.srvRun(execRunID).Completions; c != 0 {
		t.Fatalf("a completion was sent for an attempt interrupted by a restart (%d)", c)
	}
}

// Another registration replaced the session: the worker stops what that
// session ran (every lease revoked) and opens a new session by itself.
func TestReplacedSessionFencesAndReopens(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	fenced := make(chan string, 8)
	h.cfg.Hooks.Fenced = func(_, reason string) { fenced <- reason }
	h.srv.AddRun(execRunID, "sleep 300", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	h.srv.ReplaceSession() // generation 2, not ours
	if !h.drive(time.Second, 100, func() bool { return len(fenced) > 0 }) {
		t.Fatal("the replaced session's attempt was not fenced")
	}
	waitGroupGone(t, pgid) // real processes end in real time
	if !h.driveUntil(time.Second, func() bool {
		_, gen, _ := sessionOf(h)
		return gen == 3
	}) {
		t.Fatal("the worker did not open a new session after being replaced")
	}
	if reason := <-fenced; reason != "revoked" && reason != "session_replaced" {
		t.Fatalf("fence reason %q", reason)
	}
}

// The authority's cancel also ends what left the group: a setsid child and
// a double-forked one (the executor's subreaper and marker search, ADR
// 0017), reached through the worker.
func TestCancelKillsSetsidAndDoubleForkedChildren(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	h.srv.AddRun(execRunID, "setsid sleep 300 & (sleep 300 &) ; sleep 300 & wait", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	// Wait (real time, bounded) until all three sleeps carry the markers.
	deadline := time.Now().Add(realWait)
	for {
		procs, err := executor.FindProcesses(execRunID, 1, executor.Identity{})
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("found %d marked processes, want the shell and three sleeps", len(procs))
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.srv.With(func(s *fakeingress.Server) { s.Runs()[0].Cancel = true })
	if !h.drive(time.Second, 60, func() bool { return h.srvRun(execRunID).CancelSent }) {
		t.Fatal("the cancel was never sent")
	}
	waitGroupGone(t, pgid)
	if !h.driveUntil(time.Second, func() bool { return h.srvRun(execRunID).Completion != nil }) {
		t.Fatal("no completion after the cancel")
	}
	procs, err := executor.FindProcesses(execRunID, 1, executor.Identity{})
	if err != nil || len(procs) != 0 {
		t.Fatalf("after the cancel %d marked processes are alive (%v)", len(procs), err)
	}
}

// A spawn that provably never happened (a missing working directory) is
// a failed/executor_start completion; its log is empty, so no chunk is
// uploaded and the completion closes it (ADR 0032).
func TestStartFailureIsExecutorStart(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	h.srv.AddRunSpec(execRunID, `{"kind":"qinglong/command@v1","argv":{"file":"/bin/true"},"workingDirectory":"/nonexistent/ql3-test","timeoutMs":60000}`)
	h.start(nil)
	if !h.driveUntil(time.Second, func() bool { return h.srvRun(execRunID).Completion != nil }) {
		t.Fatal("no completion")
	}
	r := h.srvRun(execRunID)
	if r.Completion.Status != "failed" || r.Completion.ErrorClass != "executor_start" || r.Completion.ExitCode != nil {
		t.Fatalf("completion %+v", r.Completion)
	}
	if r.CompletedEarly || !r.LogClosed || !r.ClosedByCompletion || len(r.Log) != 0 {
		t.Fatalf("log %q closed %v (by the completion %v) early %v", r.Log, r.LogClosed, r.ClosedByCompletion, r.CompletedEarly)
	}
	if n := len(h.requestsTo(protocol.PathLeaseLog)); n != 0 {
		t.Fatalf("%d log requests for an empty log; want none", n)
	}
}

// A cancel whose grace is shorter than the executor's SIGKILLs on the
// authority's schedule: here the task ignores SIGTERM and the executor's
// own grace is an hour, so only the shortened grace can end it.
func TestCancelGraceShorterThanExecutorsKills(t *testing.T) {
	e, err := executor.New(executor.Config{WorkRoot: t.TempDir(), MaxConcurrent: 2, KillGrace: time.Hour, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	h := newHarness(t, agent.ExecRunner{E: e})
	h.srv.AddRun(execRunID, "trap '' TERM; while :; do sleep 1; done", 600_000)
	h.start(nil)
	pgid := h.startedGroup(execRunID)
	h.srv.With(func(s *fakeingress.Server) { s.Runs()[0].Cancel, s.Runs()[0].CancelNow = true, true })
	if !h.drive(time.Second, 60, func() bool { return h.srvRun(execRunID).CancelSent }) {
		t.Fatal("the cancel was never sent")
	}
	h.drive(time.Second, 2, func() bool { return false }) // the kill timer is due at once
	waitGroupGone(t, pgid)
	if !h.driveUntil(time.Second, func() bool { return h.srvRun(execRunID).Completion != nil }) {
		t.Fatal("no completion")
	}
	if c := h.srvRun(execRunID).Completion; c.Status != "cancelled" || c.Signal != "SIGKILL" {
		t.Fatalf("completion %s signal %q, want cancelled by SIGKILL", c.Status, c.Signal)
	}
}

// countingRunner counts Start calls per attempt in front of the real
// executor.
type countingRunner struct {
	agent.Runner
	mu     sync.Mutex
	starts map[string]int
}

func (c *countingRunner) Start(l agent.Launch) (agent.Process, error) {
	c.mu.Lock()
	c.starts[l.RunID+"/"+strconv.Itoa(l.Attempt)]++
	c.mu.Unlock()
	return c.Runner.Start(l)
}

// The crash loop again with real processes: 30 crashes at random journal
// steps (seeded); no attempt is started twice, and no marked process of
// any run is left when everything settled.
func TestJournalCrashesWithRealExecutor(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 20261201))
	runner := &countingRunner{Runner: newExecRunner(t), starts: map[string]int{}}
	h := newHarness(t, runner)
	var ids []string
	add := func(n int) {
		for range n {
			id := fmt.Sprintf("rx-%d-%03d", os.Getpid(), len(ids))
			ids = append(ids, id)
			h.srv.AddRun(id, "echo "+id, 60_000)
		}
	}
	settled := func() bool {
		ok := true
		h.srv.With(func(s *fakeingress.Server) {
			for _, x := range s.Runs() {
				ok = ok && (x.State == "done" || x.State == "lost")
			}
		})
		return ok
	}
	exitedOrSettled := func() bool {
		select {
		case err := <-h.done:
			h.done <- err
			return true
		default:
		}
		return settled()
	}
	add(3)
	for crashes := 0; crashes < 30; {
		target := 1 + rng.IntN(25)
		n := 0
		h.start(func(step string) error {
			n++
			if n == target {
				return errCrash
			}
			return nil
		})
		h.driveUntil(time.Second, exitedOrSettled)
		if err, exited := h.exited(); exited {
			if !errors.Is(err, errCrash) {
				t.Fatalf("agent exited with %v", err)
			}
			crashes++
			continue
		}
		if err := h.stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("agent stopped with %v", err)
		}
		add(2)
	}
	h.start(nil)
	if !h.driveUntil(time.Second, func() bool { return settled() && journalEmptyWhileRunning(h) }) {
		t.Fatal("runs did not settle after the crashes")
	}
	h.stop()
	runner.mu.Lock()
	defer runner.mu.Unlock()
	done := 0
	for _, id := range ids {
		if n := runner.starts[id+"/1"]; n > 1 {
			t.Errorf("%s started %d times", id, n)
		}
		if procs, err := executor.FindProcesses(id, 1, executor.Identity{}); err != nil || len(procs) > 0 {
			t.Errorf("%s: %d marked processes left (%v)", id, len(procs), err)
		}
		if r := h.srvRun(id); r.State == "done" {
			done++
			if string(r.Log) != id+"\n" {
				t.Errorf("%s: log %q", id, r.Log)
			}
		}
	}
	t.Logf("30 crashes, %d runs, %d done with their logs", len(ids), done)
}

// The process sees the task identity and its occurrence as on the edge
// (QL3_TASK_ID, QL3_TASK_REVISION, QL3_SCHEDULED_FOR), and runs in its
// task's own directory, not one per revision.
func TestProcessSeesTaskIdentityAndOccurrence(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	h.srv.AddRunSpec(execRunID, `{"kind":"qinglong/command@v1","shell":{"command":"echo \"$QL3_TASK_ID $QL3_TASK_REVISION $QL3_SCHEDULED_FOR $(basename \"$PWD\")\""},"timeoutMs":60000}`)
	h.start(nil)
	if !h.driveUntil(time.Second, func() bool { return h.srvRun(execRunID).Completion != nil }) {
		t.Fatal("no completion")
	}
	task := "task-" + execRunID // the fake authority's task id for this Run
	want := task + " 1 2026-01-01T00:00:00Z " + task + "\n"
	if r := h.srvRun(execRunID); string(r.Log) != want || r.Completion.Status != "succeeded" {
		t.Fatalf("log %q (%s); want %q", r.Log, r.Completion.Status, want)
	}
}
