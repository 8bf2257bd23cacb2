//go:build linux

package runner

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/worker/executor"
)

func itoa(n int) string { return strconv.Itoa(n) }

// waitLog follows an attempt's log until it contains s and returns the
// content so far. The log may not exist yet right after the claim.
func (e *env) waitLog(runID string, attempt int, s string) string {
	e.t.Helper()
	var got strings.Builder
	var off int64
	for {
		c, err := e.logs.Follow(context.Background(), runID, attempt, off, 0)
		if errs.Code(err) == errs.NotFound {
			ch := e.r.changes()
			if _, err := e.logs.Info(runID, attempt); errs.Code(err) == errs.NotFound {
				<-ch
			}
			continue
		}
		if err != nil {
			e.t.Fatal(err)
		}
		got.Write(c.Data)
		off = c.NextOffset
		if strings.Contains(got.String(), s) {
			return got.String()
		}
		if c.EOF {
			e.t.Fatalf("log of %s/%d ended without %q: %q", runID, attempt, s, got.String())
		}
	}
}

func TestRunsQueuedRunAndRecordsEverything(t *testing.T) {
	e := newEnv(t)
	task := e.task("hello", shellTask(`echo "hello $QL3_RUN_ID/$QL3_ATTEMPT"; echo oops >&2`, nil))
	r := e.runNow(task.ID)
	e.start()
	got := e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	if got.AttemptCount != 1 || got.ExitCode == nil || *got.ExitCode != 0 || got.ErrorClass != "" {
		t.Fatalf("run = %+v", got)
	}
	as := e.attempts(r.ID)
	if len(as) != 1 || as[0].Status != run.AttemptSucceeded || as[0].PID <= 0 || as[0].PGID != as[0].PID ||
		as[0].LogSize != int64(len("hello "+r.ID+"/1\noops\n")) || as[0].LogTruncated || as[0].LogPath == "" {
		t.Fatalf("attempts = %+v", as)
	}
	if log := e.readLog(r.ID, 1); log != "hello "+r.ID+"/1\noops\n" {
		t.Fatalf("log = %q", log)
	}
	if ev := e.events(r.ID); ev != "created queued dispatched starting running succeeded" {
		t.Fatalf("events = %s", ev)
	}
}

func TestRetryWithBackoffOverFakeClock(t *testing.T) {
	e := newEnv(t)
	m := newMarker(t)
	task := e.task("flaky", shellTask(m.cmd()+"; exit 3", func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 3, BackoffBaseMs: 2000, BackoffMaxMs: 3000}
	}))
	r := e.runNow(task.ID)
	e.start()

	got := e.waitRun(r.ID, "retry_wait", func(r edge.Run) bool { return r.Status == run.RunRetryWait && r.AttemptCount == 2 })
	if want := t0.UnixMilli() + 2000; got.NotBeforeMs != want {
		t.Fatalf("first retry not before %d, want %d", got.NotBeforeMs, want)
	}
	// Just before the backoff ends nothing is due.
	due, err := e.store.ListDueRuns(context.Background(), t0.UnixMilli()+1999, 10)
	if err != nil || len(due) != 0 {
		t.Fatalf("due before backoff: %v, %v", due, err)
	}
	e.clock.Advance(2 * time.Second)
	got = e.waitRun(r.ID, "second retry_wait", func(r edge.Run) bool { return r.Status == run.RunRetryWait && r.AttemptCount == 3 })
	if want := t0.UnixMilli() + 2000 + 3000; got.NotBeforeMs != want { // 4000 capped at 3000
		t.Fatalf("second retry not before %d, want %d", got.NotBeforeMs, want)
	}
	e.clock.Advance(3 * time.Second)
	got = e.waitRun(r.ID, "failed", status(run.RunFailed))
	if got.ErrorClass != run.ErrorProcessExit || *got.ExitCode != 3 {
		t.Fatalf("run = %+v", got)
	}
	as := e.attempts(r.ID)
	if len(as) != 3 {
		t.Fatalf("%d attempts, want 3", len(as))
	}
	for i, a := range as {
		if a.Status != run.AttemptFailed || a.ErrorClass != run.ErrorProcessExit || *a.ExitCode != 3 {
			t.Errorf("attempt %d = %+v", i+1, a)
		}
	}
	if lines := m.lines(t); strings.Join(lines, " ") != r.ID+"/1 "+r.ID+"/2 "+r.ID+"/3" {
		t.Fatalf("executions = %v", lines)
	}
}

func TestForbidSkipsWhileRunning(t *testing.T) {
	e := newEnv(t)
	task := e.task("long", shellTask("echo up; exec sleep 1000", func(c *spec.Command) { c.Concurrency = spec.ConcurrencyForbid }))
	first := e.runNow(task.ID)
	e.start()
	e.waitLog(first.ID, 1, "up")
	e.waitRun(first.ID, "running", status(run.RunRunning))

	second := e.runNow(task.ID)
	if second.Status != run.RunCancelled || second.Reason != edge.SkipConcurrencyForbid {
		t.Fatalf("second run = %s (%s), want cancelled (%s)", second.Status, second.Reason, edge.SkipConcurrencyForbid)
	}
	if ev := e.events(second.ID); !strings.Contains(ev, "skipped") {
		t.Fatalf("second run events = %s", ev)
	}
	if got := e.getRun(first.ID); got.Status != run.RunRunning {
		t.Fatalf("first run = %s, want still running", got.Status)
	}
	if _, err := e.store.RequestCancel(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}
	got := e.waitRun(first.ID, "cancelled", status(run.RunCancelled))
	if got.ErrorClass != run.ErrorCancelledByUser {
		t.Fatalf("first run = %+v", got)
	}
}

func TestReplaceCancelsRunningThenStartsNew(t *testing.T) {
	e := newEnv(t)
	m := newMarker(t)
	task := e.task("replace", shellTask(m.cmd()+`; (trap '' TERM; exec sleep 1000) & echo "gc=$!"; wait`, func(c *spec.Command) {
		c.Concurrency = spec.ConcurrencyReplace
	}))
	first := e.runNow(task.ID)
	e.start()
	gc, _ := strconv.Atoi(regexp.MustCompile(`gc=(\d+)\n`).FindStringSubmatch(e.waitLog(first.ID, 1, "\n"))[1])

	second := e.runNow(task.ID)
	if second.Status != run.RunQueued {
		t.Fatalf("second run = %s, want queued", second.Status)
	}
	got := e.waitRun(first.ID, "cancelled", status(run.RunCancelled))
	if got.Reason != edge.ReasonReplaced {
		t.Fatalf("first run reason = %q", got.Reason)
	}
	a := e.attempts(first.ID)[0]
	if a.Status != run.AttemptCancelled || !strings.Contains(a.Message, "replaced") {
		t.Fatalf("first attempt = %+v", a)
	}
	if !gone(gc) {
		t.Fatalf("grandchild %d of the replaced run survived", gc)
	}
	e.waitLog(second.ID, 1, "gc=")
	if got := e.getRun(second.ID); got.Status != run.RunRunning && got.Status != run.RunDispatching {
		t.Fatalf("second run = %s", got.Status)
	}
	if lines := m.lines(t); len(lines) != 2 || lines[0] != first.ID+"/1" || lines[1] != second.ID+"/1" {
		t.Fatalf("executions = %v", lines)
	}
}

func TestCancelRunningAttempt(t *testing.T) {
	e := newEnv(t)
	task := e.task("cancel", shellTask("echo up; exec sleep 1000", func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 3, BackoffBaseMs: 1000, BackoffMaxMs: 1000}
	}))
	r := e.runNow(task.ID)
	e.start()
	e.waitLog(r.ID, 1, "up")
	e.waitRun(r.ID, "running", status(run.RunRunning))
	pid := e.attempts(r.ID)[0].PID
	if _, err := e.store.RequestCancel(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	got := e.waitRun(r.ID, "cancelled", status(run.RunCancelled))
	if got.ErrorClass != run.ErrorCancelledByUser || got.AttemptCount != 1 {
		t.Fatalf("run = %+v (a cancel must not be retried)", got)
	}
	if !gone(pid) {
		t.Fatal("process survived the cancel")
	}
}

func TestTimeoutThroughRunner(t *testing.T) {
	e := newEnv(t)
	task := e.task("slow", shellTask("echo up; exec sleep 1000", func(c *spec.Command) { c.TimeoutMs = 1500 }))
	r := e.runNow(task.ID)
	e.start()
	e.waitLog(r.ID, 1, "up")
	e.waitRun(r.ID, "running", status(run.RunRunning))
	e.clock.Advance(1500 * time.Millisecond)
	got := e.waitRun(r.ID, "timed_out", status(run.RunTimedOut))
	if got.ErrorClass != run.ErrorTimeout {
		t.Fatalf("run = %+v", got)
	}
}

func TestStartFailureIsRecorded(t *testing.T) {
	e := newEnv(t)
	c := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/nonexistent/ql3-program"}}.WithDefaults()
	task := e.task("broken", c)
	r := e.runNow(task.ID)
	e.start()
	got := e.waitRun(r.ID, "failed", status(run.RunFailed))
	if got.ErrorClass != run.ErrorExecutorStart {
		t.Fatalf("run = %+v", got)
	}
	if log := e.readLog(r.ID, 1); !strings.Contains(log, "ql3: could not start") {
		t.Fatalf("log = %q", log)
	}
}

func TestGlobalConcurrencyLimit(t *testing.T) {
	e := newEnv(t, maxConcurrent(1))
	task := e.task("parallel", shellTask("echo up; exec sleep 1000", func(c *spec.Command) { c.Concurrency = spec.ConcurrencyAllow }))
	first, second := e.runNow(task.ID), e.runNow(task.ID)
	e.start()
	e.waitLog(first.ID, 1, "up")
	e.waitRun(first.ID, "running", status(run.RunRunning))
	if got := e.getRun(second.ID); got.Status != run.RunQueued {
		t.Fatalf("second run = %s while the only slot is taken", got.Status)
	}
	if _, err := e.store.RequestCancel(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}
	e.waitRun(first.ID, "cancelled", status(run.RunCancelled))
	e.waitLog(second.ID, 1, "up")
	// The executor is the truth about processes: the first attempt left its
	// table before its slot was freed, the second entered it before
	// spawning. (The runner's own table lags both ways: the second's output
	// can arrive before MarkAttemptRunning lets the runner list it, and the
	// first is dropped only after its result is recorded.)
	if n := e.exec.Running(); n != 1 {
		t.Fatalf("%d attempts running in the executor, want 1", n)
	}
	// The runner settles on exactly the second (a hang here fails by the
	// go test timeout).
	e.waitRun(second.ID, "running", status(run.RunRunning))
	for {
		ch := e.r.changes()
		if e.r.Running() == 1 {
			break
		}
		<-ch
	}
}

// TestLogFloodKeepsHeadMarkerAndTail: 100 MB of output through a real
// process keeps the first and the last bytes with the marker between them,
// and the attempt records the stored size and the truncation.
func TestLogFloodKeepsHeadMarkerAndTail(t *testing.T) {
	e := newEnv(t)
	task := e.task("chatty", shellTask(`echo FIRST; head -c 100000000 /dev/zero | tr '\0' m; echo; echo LAST`, nil))
	r := e.runNow(task.ID)
	e.start()
	e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	const total = len("FIRST\n") + 100_000_000 + len("\nLAST\n")
	head, tail := executor.HeadBytes(logstore.DefaultMaxBytesPerAttempt), executor.TailBytes(logstore.DefaultMaxBytesPerAttempt)
	marker := executor.DroppedMarker(int64(total)-head-tail, head, tail)
	a := e.attempts(r.ID)[0]
	if a.LogSize != head+int64(len(marker))+tail || !a.LogTruncated {
		t.Fatalf("attempt log size %d truncated %v", a.LogSize, a.LogTruncated)
	}
	first, err := e.logs.Read(r.ID, 1, 0, 16)
	if err != nil || !strings.HasPrefix(string(first.Data), "FIRST\nmmm") || !first.Truncated || first.BytesSeen != int64(total) {
		t.Fatalf("log start = %q %+v, %v", first.Data, first, err)
	}
	mid, err := e.logs.Read(r.ID, 1, head, int64(len(marker)))
	if err != nil || string(mid.Data) != marker {
		t.Fatalf("at the end of the head: %q, want the marker %q (%v)", mid.Data, marker, err)
	}
	last, err := e.logs.Read(r.ID, 1, a.LogSize-16, 0)
	if err != nil || !strings.HasSuffix(string(last.Data), "mmm\nLAST\n") || !last.EOF {
		t.Fatalf("log end = %q, %v", last.Data, err)
	}
}
