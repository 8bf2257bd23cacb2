package sqlite

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

func retrySpec(max int, baseMs int64, onLost bool, conc spec.ConcurrencyPolicy) spec.Command {
	c := shellSpec("false")
	c.Retry = spec.RetryPolicy{MaxAttempts: max, BackoffBaseMs: baseMs, BackoffMaxMs: 10 * baseMs, RetryOnLost: onLost}
	c.Concurrency = conc
	return c
}

func intp(v int) *int { return &v }

// start claims a due run and marks its attempt running.
func start(t *testing.T, s *Store, r edge.Run, nowMs int64) edge.Claim {
	t.Helper()
	ctx := context.Background()
	c, err := s.ClaimRun(ctx, r.ID, r.Version, nowMs)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	ref := edge.AttemptRef{RunID: r.ID, Number: c.Attempt.Number}
	if _, err := s.MarkAttemptRunning(ctx, ref, edge.AttemptStart{PID: 4242, PGID: 4242, LogPath: "/tmp/x.log", StartedAtMs: nowMs}); err != nil {
		t.Fatalf("running: %v", err)
	}
	return c
}

func TestManualRunIdempotency(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	a := mustTask(t, s, "a", shellSpec("true"))
	b := mustTask(t, s, "b", shellSpec("true"))

	r1, created, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: a.ID, IdempotencyKey: "click-1"})
	if err != nil || !created || r1.Status != run.RunQueued || r1.AttemptCount != 1 || r1.Origin != edge.OriginManual {
		t.Fatalf("first: %+v %v %v", r1, created, err)
	}
	r2, created, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: a.ID, IdempotencyKey: "click-1"})
	if err != nil || created || r2.ID != r1.ID {
		t.Fatalf("same key: %+v %v %v", r2, created, err)
	}
	if _, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: b.ID, IdempotencyKey: "click-1"}); errs.Code(err) != errs.Conflict {
		t.Fatalf("same key, other task: %v", err)
	}
	if _, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: a.ID, IdempotencyKey: "has space"}); errs.Field(err) != "idempotencyKey" {
		t.Fatalf("bad key: %v", err)
	}
	if got := eventTypes(t, s, r1.ID); !slices.Equal(got, []string{"run.created", "run.queued"}) {
		t.Fatalf("events %v", got)
	}
	atts, err := s.ListAttempts(ctx, r1.ID)
	if err != nil || len(atts) != 1 || atts[0].Status != run.AttemptClaimed {
		t.Fatalf("attempts %+v %v", atts, err)
	}
	select {
	case <-s.RunsReady():
	default:
		t.Fatal("run-now did not signal RunsReady")
	}
	rerun, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: a.ID, RerunOf: r1.ID})
	if err != nil || rerun.RerunOf != r1.ID {
		t.Fatalf("rerun %+v %v", rerun, err)
	}
	if _, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: b.ID, RerunOf: r1.ID}); errs.Field(err) != "rerunOf" {
		t.Fatalf("rerun of another task's run: %v", err)
	}
}

func TestListRunsFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)
	a := mustTask(t, s, "a", retrySpec(1, 0, false, spec.ConcurrencyAllow))
	b := mustTask(t, s, "b", retrySpec(1, 0, false, spec.ConcurrencyAllow))
	var aRuns []string
	for i := 0; i < 25; i++ {
		task := a
		if i%5 == 0 {
			task = b
		}
		r := mustRun(t, s, task.ID, "")
		if task.ID == a.ID {
			aRuns = append(aRuns, r.ID)
		}
		if i%3 == 0 {
			clk.Advance(time.Millisecond)
		}
	}
	var got []string
	cur := ""
	for {
		page, err := s.ListRuns(ctx, edge.RunFilter{TaskID: a.ID, Limit: 7, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Runs {
			got = append(got, r.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cur = page.NextCursor
	}
	slices.Reverse(aRuns) // newest first
	if !slices.Equal(got, aRuns) {
		t.Fatalf("paged %d runs, want %d in newest-first order", len(got), len(aRuns))
	}
	page, err := s.ListRuns(ctx, edge.RunFilter{Statuses: []run.RunStatus{run.RunSucceeded}})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("status filter: %+v %v", page, err)
	}
	if _, err := s.ListRuns(ctx, edge.RunFilter{Statuses: []run.RunStatus{"bogus"}}); errs.Field(err) != "status" {
		t.Fatalf("bad status: %v", err)
	}
}

func TestRunnerHappyPath(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "a", shellSpec("true"))
	r := mustRun(t, s, task.ID, "")
	now := t0.UnixMilli() + 10

	due, err := s.ListDueRuns(ctx, now, 10)
	if err != nil || len(due) != 1 || due[0].ID != r.ID {
		t.Fatalf("due %+v %v", due, err)
	}
	c, err := s.ClaimRun(ctx, r.ID, r.Version, now)
	if err != nil || c.Run.Status != run.RunDispatching || c.Attempt.Status != run.AttemptStarting || c.Revision.Spec.Shell.Command != "true" {
		t.Fatalf("claim %+v %v", c, err)
	}
	if _, err := s.ClaimRun(ctx, r.ID, r.Version, now); errs.Code(err) != errs.Conflict {
		t.Fatalf("second claim: %v", err)
	}
	ref := edge.AttemptRef{RunID: r.ID, Number: 1}
	if _, err := s.MarkAttemptRunning(ctx, ref, edge.AttemptStart{PID: 7, PGID: 7, LogPath: "/l", StartedAtMs: now + 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateAttemptLog(ctx, ref, 100, false); err != nil {
		t.Fatal(err)
	}
	fin, err := s.FinishAttempt(ctx, ref, edge.AttemptResult{Status: run.AttemptSucceeded, ExitCode: intp(0), LogSize: 120, FinishedAtMs: now + 50})
	if err != nil || fin.Run.Status != run.RunSucceeded || fin.Retry != nil || fin.Run.FinishedAtMs != now+50 || fin.Attempt.LogSize != 120 {
		t.Fatalf("finish %+v %v", fin, err)
	}
	if _, err := s.FinishAttempt(ctx, ref, edge.AttemptResult{Status: run.AttemptFailed, FinishedAtMs: now + 60}); errs.Code(err) != errs.Conflict {
		t.Fatalf("late finish: %v", err)
	}
	want := []string{"run.created", "run.queued", "run.dispatched", "run.starting", "run.running", "run.succeeded"}
	if got := eventTypes(t, s, r.ID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	evs, _ := s.ListRunEvents(ctx, r.ID, 4, 10)
	if len(evs) != 2 || evs[0].Seq != 5 || evs[1].Payload.From != "running" || evs[1].Payload.DurationMs != 49 {
		t.Fatalf("events after 4: %+v", evs)
	}
	if _, err := s.ListRunEvents(ctx, "missing", 0, 10); errs.Code(err) != errs.NotFound {
		t.Fatalf("events of a missing run: %v", err)
	}
}

func TestRetryWithBackoff(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "a", retrySpec(3, 1000, false, spec.ConcurrencyForbid))
	r := mustRun(t, s, task.ID, "")
	now := t0.UnixMilli()

	start(t, s, r, now)
	fin, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: r.ID, Number: 1},
		edge.AttemptResult{Status: run.AttemptFailed, ExitCode: intp(3), FinishedAtMs: now + 100})
	if err != nil || fin.Run.Status != run.RunRetryWait || fin.Retry == nil || fin.Retry.Number != 2 || fin.Run.NotBeforeMs != now+1100 {
		t.Fatalf("first failure: %+v %v", fin, err)
	}
	if due, _ := s.ListDueRuns(ctx, now+1099, 10); len(due) != 0 {
		t.Fatalf("retry due before its backoff: %+v", due)
	}
	if at, ok, _ := s.NextDueAtMs(ctx, now+100); !ok || at != now+1100 {
		t.Fatalf("next due %d %v", at, ok)
	}
	if _, err := s.ClaimRun(ctx, r.ID, fin.Run.Version, now+1099); errs.Code(err) != errs.Conflict {
		t.Fatalf("early claim: %v", err)
	}
	due, _ := s.ListDueRuns(ctx, now+1100, 10)
	if len(due) != 1 {
		t.Fatalf("retry not due: %+v", due)
	}
	c := start(t, s, due[0], now+1100)
	if c.Attempt.Number != 2 {
		t.Fatalf("claimed attempt %d", c.Attempt.Number)
	}
	fin, _ = s.FinishAttempt(ctx, edge.AttemptRef{RunID: r.ID, Number: 2}, edge.AttemptResult{Status: run.AttemptFailed, ExitCode: intp(3), FinishedAtMs: now + 1200})
	if fin.Run.NotBeforeMs != now+1200+2000 {
		t.Fatalf("second backoff: %d", fin.Run.NotBeforeMs-now-1200)
	}
	start(t, s, fin.Run, fin.Run.NotBeforeMs)
	fin, err = s.FinishAttempt(ctx, edge.AttemptRef{RunID: r.ID, Number: 3}, edge.AttemptResult{Status: run.AttemptFailed, ExitCode: intp(3), FinishedAtMs: now + 9000})
	if err != nil || fin.Run.Status != run.RunFailed || fin.Retry != nil || *fin.Run.ExitCode != 3 || fin.Run.ErrorClass != run.ErrorProcessExit {
		t.Fatalf("last failure: %+v %v", fin, err)
	}
}

func TestFinishOutcomes(t *testing.T) {
	cases := []struct {
		name       string
		spec       spec.Command
		running    bool // false: the attempt ends while starting
		res        edge.AttemptResult
		wantRun    run.RunStatus
		wantRetry  bool
		wantEvents []string
	}{
		{"timeout never retries", retrySpec(3, 0, true, spec.ConcurrencyForbid), true,
			edge.AttemptResult{Status: run.AttemptTimedOut}, run.RunTimedOut, false, []string{"run.timed_out"}},
		{"exec failure retries", retrySpec(2, 0, false, spec.ConcurrencyForbid), false,
			edge.AttemptResult{Status: run.AttemptFailed, ErrorClass: run.ErrorExecutorStart}, run.RunRetryWait, true, []string{"run.retry_scheduled"}},
		{"lost with retryOnLost", retrySpec(2, 0, true, spec.ConcurrencyForbid), true,
			edge.AttemptResult{Status: run.AttemptLost}, run.RunRetryWait, true, []string{"run.lost", "run.retry_scheduled"}},
		{"lost without retryOnLost", retrySpec(2, 0, false, spec.ConcurrencyForbid), true,
			edge.AttemptResult{Status: run.AttemptLost}, run.RunLost, false, []string{"run.lost"}},
		{"lost while starting", retrySpec(1, 0, true, spec.ConcurrencyForbid), false,
			edge.AttemptResult{Status: run.AttemptLost}, run.RunLost, false, []string{"run.lost"}},
		{"no retry when asked", retrySpec(3, 0, false, spec.ConcurrencyForbid), true,
			edge.AttemptResult{Status: run.AttemptFailed, NoRetry: true}, run.RunFailed, false, []string{"run.failed"}},
		{"cancelled", retrySpec(3, 0, false, spec.ConcurrencyForbid), true,
			edge.AttemptResult{Status: run.AttemptCancelled}, run.RunCancelled, false, []string{"run.cancelled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, clock.NewFake(t0))
			task := mustTask(t, s, "a", tc.spec)
			r := mustRun(t, s, task.ID, "")
			now := t0.UnixMilli()
			if tc.running {
				start(t, s, r, now)
			} else if _, err := s.ClaimRun(ctx, r.ID, r.Version, now); err != nil {
				t.Fatal(err)
			}
			before := len(eventTypes(t, s, r.ID))
			tc.res.FinishedAtMs = now + 10
			fin, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: r.ID, Number: 1}, tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if fin.Run.Status != tc.wantRun || (fin.Retry != nil) != tc.wantRetry || fin.Attempt.Status != tc.res.Status {
				t.Fatalf("run %s retry %v attempt %s", fin.Run.Status, fin.Retry != nil, fin.Attempt.Status)
			}
			if got := eventTypes(t, s, r.ID)[before:]; !slices.Equal(got, tc.wantEvents) {
				t.Fatalf("events %v, want %v", got, tc.wantEvents)
			}
		})
	}
}

func TestCrashRecoveryQueries(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/edge.db"
	clk := clock.NewFake(t0)
	s := openAt(t, path, clk)
	task := mustTask(t, s, "a", retrySpec(2, 0, true, spec.ConcurrencyAllow))
	running := mustRun(t, s, task.ID, "1")
	starting := mustRun(t, s, task.ID, "2")
	queued := mustRun(t, s, task.ID, "3")
	now := t0.UnixMilli()
	start(t, s, running, now)
	if _, err := s.ClaimRun(ctx, starting.ID, starting.Version, now); err != nil {
		t.Fatal(err)
	}
	s.Close() // the process dies

	s2 := openAt(t, path, clk)
	inflight, err := s2.ListInFlight(ctx)
	if err != nil || len(inflight) != 2 {
		t.Fatalf("in flight %+v %v", inflight, err)
	}
	for _, f := range inflight {
		if f.Attempt.Status == run.AttemptRunning && f.Attempt.PID != 4242 {
			t.Fatalf("pid not kept: %+v", f.Attempt)
		}
		fin, err := s2.FinishAttempt(ctx, edge.AttemptRef{RunID: f.Run.ID, Number: f.Attempt.Number},
			edge.AttemptResult{Status: run.AttemptLost, Message: "process gone after restart", FinishedAtMs: now + 1000})
		if err != nil || fin.Run.Status != run.RunRetryWait || fin.Retry == nil {
			t.Fatalf("recover %+v %v", fin, err)
		}
	}
	if inflight, _ := s2.ListInFlight(ctx); len(inflight) != 0 {
		t.Fatalf("still in flight: %+v", inflight)
	}
	due, _ := s2.ListDueRuns(ctx, now+1000, 10)
	if len(due) != 3 {
		t.Fatalf("due after recovery: %d, want 3 (the queued one once, two retries)", len(due))
	}
	ids := map[string]bool{}
	for _, r := range due {
		ids[r.ID] = true
	}
	if !ids[queued.ID] || !ids[running.ID] || !ids[starting.ID] {
		t.Fatalf("due runs %v", ids)
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "a", retrySpec(3, 0, true, spec.ConcurrencyAllow))
	now := t0.UnixMilli()

	waiting := mustRun(t, s, task.ID, "w")
	c, err := s.RequestCancel(ctx, waiting.ID)
	if err != nil || c.Status != run.RunCancelled || c.ErrorClass != run.ErrorCancelledByUser {
		t.Fatalf("cancel queued %+v %v", c, err)
	}
	if a, _ := s.GetAttempt(ctx, edge.AttemptRef{RunID: waiting.ID, Number: 1}); a.Status != run.AttemptCancelled {
		t.Fatalf("attempt of a cancelled run: %s", a.Status)
	}
	if _, err := s.RequestCancel(ctx, waiting.ID); errs.Code(err) != errs.Conflict {
		t.Fatalf("cancel of an ended run: %v", err)
	}

	active := mustRun(t, s, task.ID, "a")
	start(t, s, active, now)
	c, err = s.RequestCancel(ctx, active.ID)
	if err != nil || c.Status != run.RunRunning || c.CancelRequestedAtMs == 0 {
		t.Fatalf("cancel running %+v %v", c, err)
	}
	select {
	case <-s.CancelRequested():
	default:
		t.Fatal("no CancelRequested signal")
	}
	if again, err := s.RequestCancel(ctx, active.ID); err != nil || again.Version != c.Version {
		t.Fatalf("second request is not idempotent: %+v %v", again, err)
	}
	list, err := s.ListCancelRequested(ctx)
	if err != nil || len(list) != 1 || list[0].ID != active.ID {
		t.Fatalf("cancel requested %+v %v", list, err)
	}
	// The process died of the signal: reported failed, it must not retry.
	fin, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: active.ID, Number: 1},
		edge.AttemptResult{Status: run.AttemptFailed, ExitCode: intp(143), FinishedAtMs: now + 5})
	if err != nil || fin.Run.Status != run.RunFailed || fin.Retry != nil {
		t.Fatalf("finish after cancel request %+v %v", fin, err)
	}
	if list, _ := s.ListCancelRequested(ctx); len(list) != 0 {
		t.Fatalf("ended run still cancel-requested: %+v", list)
	}
	want := []string{"run.created", "run.queued", "run.dispatched", "run.starting", "run.running", "run.cancel_requested", "run.failed"}
	if got := eventTypes(t, s, active.ID); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
}

func TestConcurrencyPolicyAtAdmission(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	now := t0.UnixMilli()

	forbid := mustTask(t, s, "forbid", retrySpec(1, 0, false, spec.ConcurrencyForbid))
	first := mustRun(t, s, forbid.ID, "")
	second, created, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: forbid.ID})
	if err != nil || !created || second.Status != run.RunCancelled || second.Reason != edge.SkipConcurrencyForbid || second.AttemptCount != 0 {
		t.Fatalf("forbid: %+v %v", second, err)
	}
	if got := eventTypes(t, s, second.ID); !slices.Equal(got, []string{"run.created", "run.skipped"}) {
		t.Fatalf("forbid events %v", got)
	}
	if r, _ := s.GetRun(ctx, first.ID); r.Status != run.RunQueued {
		t.Fatalf("forbid touched the first run: %s", r.Status)
	}

	replace := mustTask(t, s, "replace", retrySpec(1, 0, false, spec.ConcurrencyReplace))
	old := mustRun(t, s, replace.ID, "")
	start(t, s, old, now)
	waiting := mustRun(t, s, replace.ID, "")
	newest := mustRun(t, s, replace.ID, "")
	if r, _ := s.GetRun(ctx, old.ID); r.CancelRequestedAtMs == 0 || r.Reason != edge.ReasonReplaced {
		t.Fatalf("replace did not ask the active run to cancel: %+v", r)
	}
	if r, _ := s.GetRun(ctx, waiting.ID); r.Status != run.RunCancelled || r.Reason != edge.ReasonReplaced {
		t.Fatalf("replace left a waiting run: %+v", r)
	}
	for _, r := range mustDue(t, s, now) {
		if r.TaskID == replace.ID {
			t.Fatal("the replacing run is due while the replaced one still runs")
		}
	}
	if _, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: old.ID, Number: 1}, edge.AttemptResult{Status: run.AttemptCancelled, FinishedAtMs: now + 1}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.GetRun(ctx, old.ID); r.Status != run.RunCancelled || r.Reason != edge.ReasonReplaced {
		t.Fatalf("replaced run: %+v", r)
	}
	var found bool
	for _, r := range mustDue(t, s, now+1) {
		found = found || r.ID == newest.ID
	}
	if !found {
		t.Fatal("the replacing run is not due after the old one ended")
	}
}

func mustDue(t *testing.T, s *Store, nowMs int64) []edge.Run {
	t.Helper()
	due, err := s.ListDueRuns(context.Background(), nowMs, edge.MaxPageSize)
	if err != nil {
		t.Fatal(err)
	}
	return due
}

func TestPruneRuns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "a", retrySpec(1, 0, false, spec.ConcurrencyAllow))
	now := t0.UnixMilli()
	var ended []edge.Run
	for i := 0; i < 5; i++ {
		r := mustRun(t, s, task.ID, "")
		start(t, s, r, now)
		fin, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: r.ID, Number: 1},
			edge.AttemptResult{Status: run.AttemptSucceeded, ExitCode: intp(0), FinishedAtMs: now + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ended = append(ended, fin.Run)
	}
	rerun, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, RerunOf: ended[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneRuns(ctx, now+3, 2) // ended[0..2] qualify, limit 2
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	for i, r := range ended {
		_, err := s.GetRun(ctx, r.ID)
		if gone := errs.Code(err) == errs.NotFound; gone != (i < 2) {
			t.Fatalf("run %d: gone=%v", i, gone)
		}
	}
	if r, err := s.GetRun(ctx, rerun.ID); err != nil || r.RerunOf != "" || r.Status != run.RunQueued {
		t.Fatalf("re-run after pruning its origin: %+v %v", r, err)
	}
	if n, _ := s.PruneRuns(ctx, now+3, 100); n != 1 {
		t.Fatalf("second batch pruned %d, want 1", n)
	}
	if _, err := s.PruneRuns(ctx, now, edge.MaxPruneBatch+1); errs.Field(err) != "limit" {
		t.Fatalf("oversized batch: %v", err)
	}
}

func TestSkipRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "a", retrySpec(1, 0, false, spec.ConcurrencyAllow))
	r := mustRun(t, s, task.ID, "")
	if _, err := s.SkipRun(ctx, r.ID, r.Version, "Not A Code", t0.UnixMilli()); errs.Field(err) != "reason" {
		t.Fatalf("free-text reason: %v", err)
	}
	if _, err := s.SkipRun(ctx, r.ID, r.Version+1, "runner_full", t0.UnixMilli()); errs.Code(err) != errs.Conflict {
		t.Fatalf("stale version: %v", err)
	}
	got, err := s.SkipRun(ctx, r.ID, r.Version, "runner_full", t0.UnixMilli())
	if err != nil || got.Status != run.RunCancelled || got.Reason != "runner_full" || got.FinishedAtMs != t0.UnixMilli() {
		t.Fatalf("skip %+v %v", got, err)
	}
	evs, _ := s.ListRunEvents(ctx, r.ID, 2, 10)
	if len(evs) != 1 || evs[0].Type != run.EventCancelled || evs[0].Payload.Reason != "runner_full" {
		t.Fatalf("events %+v", evs)
	}
	if _, err := s.SkipRun(ctx, r.ID, got.Version, "runner_full", t0.UnixMilli()); errs.Code(err) != errs.Conflict {
		t.Fatalf("skip of an ended run: %v", err)
	}
}

func TestNextFireAtMs(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)
	now := t0.UnixMilli()
	if _, ok, err := s.NextFireAtMs(ctx, now); ok || err != nil {
		t.Fatalf("no schedules: ok=%v err=%v", ok, err)
	}
	task := mustTask(t, s, "a", shellSpec("true"))
	if _, err := s.CreateTrigger(ctx, task.ID, edge.TriggerInput{Expression: "@hourly", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if at, ok, _ := s.NextFireAtMs(ctx, now); !ok || at != now {
		t.Fatalf("uninitialised schedule: %d %v, want due now", at, ok)
	}
	items, _ := s.DueSchedules(ctx, now, 1)
	if _, err := s.ApplyDecision(ctx, items[0], schedule.Decision{Kind: schedule.Init, NextFireAtMs: now + 3600_000}, now); err != nil {
		t.Fatal(err)
	}
	if at, ok, _ := s.NextFireAtMs(ctx, now); !ok || at != now+3600_000 {
		t.Fatalf("initialised schedule: %d %v", at, ok)
	}
	if _, err := s.DueSchedules(ctx, now, 0); errs.Field(err) != "limit" {
		t.Fatalf("zero limit: %v", err)
	}
	if _, err := s.ApplyDecision(ctx, items[0], schedule.Decision{Kind: schedule.Fire, NextFireAtMs: now}, now); errs.Code(err) != errs.Invalid {
		t.Fatalf("fire without an occurrence: %v", err)
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never cut inside a rune
		{"a\xffb", 10, "a\uFFFDb"},
		{"", 0, ""},
	} {
		if got := truncateUTF8(tc.in, tc.n); got != tc.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
