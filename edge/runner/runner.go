// Package runner turns queued edge Runs into executed attempts.
//
// One loop goroutine does all claiming: it wakes when the store signals new
// runs (admission, run-now, a finished attempt unblocking another run, a
// retry), when the earliest not-before time of a waiting run arrives, when
// one of its own attempts ends, and on a fallback poll (default 5 s). Each
// round lists due runs, takes a slot of the executor's global limit per run,
// claims the run durably (ClaimRun: run dispatching, attempt starting) and
// only then spawns the process; MarkAttemptRunning records pid/pgid. A
// watcher goroutine per attempt records the result (FinishAttempt applies
// the retry policy: retry_wait with backoff, after a failed or a lost attempt
// with retryOnLost) and refreshes the log size while the attempt runs.
//
// Concurrency policies are decided at admission by the store (forbid skips
// the new run with reason concurrency_forbid; replace cancels waiting runs
// and requests cancel of the active one); ListDueRuns holds a forbid/replace
// run back while another run of its task is active. The runner enforces the
// cancel side: every wake (and the CancelRequested signal) compares the
// store's cancel-requested runs with its running attempts and stops them
// (SIGTERM to the group, SIGKILL after the kill grace; the attempt ends
// cancelled/cancelled_by_user). The replacing run starts when the old
// attempt has ended.
//
// Crash safety. Recover runs before the first round: every attempt the store
// still has as starting or running belonged to a previous ql3-edge process.
// Its processes are found by the identity the runner wrote to StateDir right
// after spawning (pid, pgid, start time, boot id — a reused pid does not
// match) and by the QL3_RUN_ID/QL3_ATTEMPT markers in /proc/<pid>/environ
// (which also covers a crash between spawn and that write). Processes still
// alive are terminated, not re-attached: their output pipe and exit status
// belonged to the dead supervisor, so nothing they did afterwards could be
// recorded. The attempt then ends lost (worker_lost) and the store retries
// it if retryOnLost allows. If some process survives SIGKILL the attempt is
// still recorded lost but with NoRetry, so the task never runs twice.
// Queued runs admitted before the crash are simply claimed by the loop, once
// (ClaimRun compares and sets the run version).
//
// Shutdown (ctx of Run ends) drains (drain.go, ADR 0040): the loop stops
// claiming and starting, running attempts get Config.DrainGrace to finish,
// and whatever still runs then (or after StopNow) is stopped the same way as
// a cancel and recorded cancelled with reason shutdown, never lost.
package runner

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
)

// Defaults.
const (
	DefaultPollInterval      = 5 * time.Second
	DefaultLogUpdateInterval = 10 * time.Second
	// storeWriteTimeout bounds a store write made after the loop's context
	// ended (recording results during shutdown).
	storeWriteTimeout = 10 * time.Second
	finishTries       = 3
)

// Store is what the runner needs from edge.Store.
type Store interface {
	edge.RunnerStore
	RunsReady() <-chan struct{}
	CancelRequested() <-chan struct{}
}

var _ Store = edge.Store(nil)

// Config wires a Runner.
type Config struct {
	Store    Store
	Executor *executor.Executor
	Logs     *logstore.Store
	// StateDir holds one small file per running attempt with its process
	// identity (crash recovery); created 0700.
	StateDir          string
	Clock             clock.Clock   // nil → clock.Real{}
	Logger            *slog.Logger  // nil → discard
	PollInterval      time.Duration // fallback poll; 0 → DefaultPollInterval
	LogUpdateInterval time.Duration // log size refresh of running attempts; 0 → default
	BatchSize         int           // runs listed per round; 0 → edge.MaxPageSize
	// Envs is the env store each attempt's environment and output masking
	// come from (env.go); nil runs tasks with their inline environment only.
	Envs EnvSource
	// Scripts is the scripts folder with its interpreters and the `task`
	// helper (script.go); nil runs no script task.
	Scripts *Scripts
	// DrainGrace is how long running attempts may finish after Run's
	// context ends before they are stopped; 0 stops them at once.
	DrainGrace time.Duration
	// AttemptEnv adds QL3_ variables to each attempt (notifyenv.go).
	AttemptEnv AttemptEnvFunc
}

// Runner executes queued runs. Create with New, call Recover once, then Run.
type Runner struct {
	cfg   Config
	store Store
	exec  *executor.Executor
	logs  *logstore.Store
	clock clock.Clock
	log   *slog.Logger

	wake chan struct{} // an attempt ended: a slot is free, maybe a run unblocked
	envs envCache      // the env store's entries as of its version (env.go)

	mu        sync.Mutex
	active    map[edge.AttemptRef]*attempt
	recovered bool
	changed   chan struct{}  // closed and replaced when an attempt starts or ends (tests wait on it)
	wg        sync.WaitGroup // watchers
	drainCtl  drainState
}

// attempt is one process this runner started and still watches.
type attempt struct {
	ref      edge.AttemptRef
	taskID   string
	h        *executor.Handle
	w        *logstore.Writer
	out      *maskedOutput // in front of w: env values masked (env.go)
	running  bool          // MarkAttemptRunning committed
	shutdown bool          // stopped by the drain (under Runner.mu)
}

// New validates cfg.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.Store == nil:
		return nil, errs.Invalidf("runner.store", "must be set")
	case cfg.Executor == nil:
		return nil, errs.Invalidf("runner.executor", "must be set")
	case cfg.Logs == nil:
		return nil, errs.Invalidf("runner.logs", "must be set")
	case cfg.StateDir == "":
		return nil, errs.Invalidf("runner.stateDir", "must be set")
	case cfg.PollInterval < 0 || cfg.LogUpdateInterval < 0 || cfg.DrainGrace < 0:
		return nil, errs.Invalidf("runner.pollInterval", "intervals must not be negative")
	case cfg.BatchSize < 0 || cfg.BatchSize > edge.MaxPageSize:
		return nil, errs.Invalidf("runner.batchSize", "must be 0..%d, got %d", edge.MaxPageSize, cfg.BatchSize)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.LogUpdateInterval == 0 {
		cfg.LogUpdateInterval = DefaultLogUpdateInterval
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = edge.MaxPageSize
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("runner: create state dir: %w", err)
	}
	return &Runner{
		cfg:      cfg,
		store:    cfg.Store,
		exec:     cfg.Executor,
		logs:     cfg.Logs,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		wake:     make(chan struct{}, 1),
		active:   make(map[edge.AttemptRef]*attempt),
		changed:  make(chan struct{}),
		drainCtl: drainState{now: make(chan struct{}), started: make(chan struct{}), timerSet: make(chan struct{})},
	}, nil
}

// Running is the number of attempts this runner is watching.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

func (r *Runner) notify() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notifyLocked()
}

func (r *Runner) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// changes returns a channel closed at the next attempt start or end.
func (r *Runner) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Runner) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run recovers (if Recover was not called) and then executes runs until ctx
// ends; it then stops running attempts, records them and returns nil. An
// error is returned only when recovery fails.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	recovered := r.recovered
	r.mu.Unlock()
	if !recovered {
		if _, err := r.Recover(ctx); err != nil {
			return err
		}
	}
	for {
		next := r.round(ctx)
		r.enforceCancels(ctx)
		wait := r.cfg.PollInterval
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(r.clock.Now()), 0))
		}
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			r.shutdown()
			return nil
		case <-r.store.RunsReady():
		case <-r.store.CancelRequested():
		case <-r.wake:
		case <-t.C():
		}
		t.Stop()
	}
}

// round claims and starts due runs while slots are free. It returns when the
// next waiting run becomes due (zero if unknown or none).
func (r *Runner) round(ctx context.Context) time.Time {
	var now time.Time
	for ctx.Err() == nil {
		now = r.clock.Now()
		due, err := r.store.ListDueRuns(ctx, now.UnixMilli(), r.cfg.BatchSize)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("listing due runs", "err", err)
			}
			return time.Time{}
		}
		started, full := 0, false
		// Admission keeps at most one waiting run per forbid/replace task,
		// but two non-allow runs of one task must never start in one round.
		exclusive := make(map[string]bool)
		for _, run := range due {
			if run.Concurrency != spec.ConcurrencyAllow {
				if exclusive[run.TaskID] || r.taskActive(run.TaskID) {
					continue
				}
			}
			slot, ok := r.exec.TryAcquire()
			if !ok {
				full = true
				break
			}
			if r.launch(ctx, slot, run, now) && run.Concurrency != spec.ConcurrencyAllow {
				exclusive[run.TaskID] = true
			}
			started++
		}
		if full || len(due) < r.cfg.BatchSize || started == 0 {
			break
		}
	}
	// Ask relative to the time of the last listing: a run that was not due
	// then must be reported even if the clock moved on meanwhile.
	at, ok, err := r.store.NextDueAtMs(ctx, now.UnixMilli())
	if err != nil || !ok {
		return time.Time{}
	}
	return time.UnixMilli(at)
}

func (r *Runner) taskActive(taskID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.active {
		if a.taskID == taskID {
			return true
		}
	}
	return false
}

// launch claims one run and starts its attempt. It reports whether a
// process was started. The slot is consumed either way.
func (r *Runner) launch(ctx context.Context, slot *executor.Slot, due edge.Run, now time.Time) bool {
	claim, err := r.store.ClaimRun(ctx, due.ID, due.Version, now.UnixMilli())
	if err != nil {
		slot.Release()
		if errs.Code(err) != errs.Conflict && ctx.Err() == nil {
			r.log.Error("claiming run", "run", due.ID, "err", err)
		}
		return false
	}
	// From here on the attempt is durably "starting": every path must end
	// it (or leave it to crash recovery), whatever ctx does.
	wctx := context.WithoutCancel(ctx)
	ref := edge.AttemptRef{RunID: claim.Run.ID, Number: claim.Attempt.Number}
	if claim.Run.CancelRequestedAtMs != 0 {
		slot.Release()
		r.finish(wctx, ref, edge.AttemptResult{Status: run.AttemptCancelled, ErrorClass: run.ErrorCancelledByUser,
			Message: cancelMessage(claim.Run), FinishedAtMs: r.clock.Now().UnixMilli()})
		return false
	}
	w, err := r.logs.Create(ref.RunID, ref.Number)
	if err != nil {
		slot.Release()
		r.log.Error("creating attempt log", "run", ref.RunID, "attempt", ref.Number, "err", err)
		r.finish(wctx, ref, edge.AttemptResult{Status: run.AttemptFailed, ErrorClass: run.ErrorInternal,
			Message: "could not create the log file", FinishedAtMs: r.clock.Now().UnixMilli()})
		return false
	}
	ae, err := r.resolveEnv(wctx, claim)
	if err != nil {
		slot.Release()
		msg := "could not build the environment: " + err.Error()
		fmt.Fprintf(w, "ql3: %s\n", msg)
		sum, _ := w.Close()
		r.finish(wctx, ref, edge.AttemptResult{Status: run.AttemptFailed, ErrorClass: run.ErrorClass(envErrorClass(err)),
			Message: msg, LogSize: sum.Bytes, LogTruncated: sum.Truncated, FinishedAtMs: r.clock.Now().UnixMilli()})
		return false
	}
	out := newMaskedOutput(w, ae.matcher)
	req := buildRequest(claim, out)
	req.Spec.Env = ae.vars
	req.ExtraEnv = ae.extra
	tree, err := r.prepareScript(&req, claim)
	var h *executor.Handle
	if err != nil {
		slot.Release()
	} else {
		h, err = r.exec.Start(slot, req)
	}
	if err != nil {
		msg := "could not start: " + err.Error()
		fmt.Fprintf(w, "ql3: %s\n", msg)
		sum, _ := w.Close()
		r.finish(wctx, ref, edge.AttemptResult{Status: run.AttemptFailed, ErrorClass: run.ErrorExecutorStart,
			Message: msg, LogSize: sum.Bytes, LogTruncated: sum.Truncated, FinishedAtMs: r.clock.Now().UnixMilli()})
		return false
	}
	if err := r.writeIdentity(ref, h.Identity()); err != nil {
		r.log.Warn("recording process identity", "run", ref.RunID, "attempt", ref.Number, "err", err)
	}
	logPath, _ := r.logs.Path(ref.RunID, ref.Number)
	id := h.Identity()
	cur, err := r.store.MarkAttemptRunning(wctx, ref, edge.AttemptStart{PID: id.PID, PGID: id.PGID, LogPath: logPath,
		StartedAtMs: h.StartedAt().UnixMilli(), ScriptTree: tree})
	switch {
	case err != nil:
		// The attempt stays starting; the watcher records it failed.
		r.log.Error("recording attempt running", "run", ref.RunID, "attempt", ref.Number, "err", err)
		h.Stop(run.AttemptFailed, run.ErrorInternal, "could not record the running state")
	case cur.CancelRequestedAtMs != 0:
		h.Stop(run.AttemptCancelled, run.ErrorCancelledByUser, cancelMessage(cur))
	default:
		r.log.Info("run running", "run", ref.RunID, "attempt", ref.Number, "task", claim.Run.TaskID)
	}
	// Watch only now: a result recorded before MarkAttemptRunning would
	// race it (and succeeded is not a valid end of a starting attempt).
	a := &attempt{ref: ref, taskID: claim.Run.TaskID, h: h, w: w, out: out, running: err == nil}
	r.mu.Lock()
	r.active[ref] = a
	r.mu.Unlock()
	r.wg.Add(1)
	go r.watch(a)
	r.notify()
	return true
}

// buildRequest maps the pinned spec onto an executor request.
func buildRequest(c edge.Claim, out io.Writer) executor.Request {
	cmd := c.Revision.Spec
	req := executor.Request{
		RunID:        c.Run.ID,
		Attempt:      c.Attempt.Number,
		TaskID:       c.Run.TaskID,
		TaskRevision: c.Run.TaskRevision,
		Spec:         executor.SpecFor(cmd, time.Duration(cmd.TimeoutMs)*time.Millisecond),
		Output:       out,
	}
	if c.Run.ScheduledForMs > 0 {
		req.ScheduledFor = time.UnixMilli(c.Run.ScheduledForMs).UTC()
	}
	return req
}

func cancelMessage(r edge.Run) string {
	if r.Reason == edge.ReasonReplaced {
		return "replaced by a newer run (concurrency: replace)"
	}
	return "cancelled on request"
}

// watch waits for one attempt, refreshing its log size meanwhile, and
// records the result.
func (r *Runner) watch(a *attempt) {
	defer r.wg.Done()
	ctx := context.Background()
	var reported logstore.Summary
	for {
		t := r.clock.NewTimer(r.cfg.LogUpdateInterval)
		select {
		case <-a.h.Done():
			t.Stop()
			r.complete(ctx, a)
			return
		case <-t.C():
			if sum := a.w.Summary(); sum.Bytes != reported.Bytes || sum.Truncated != reported.Truncated {
				if err := r.store.UpdateAttemptLog(ctx, a.ref, sum.Bytes, sum.Truncated); err != nil && errs.Code(err) != errs.Conflict {
					r.log.Warn("updating attempt log size", "run", a.ref.RunID, "attempt", a.ref.Number, "err", err)
				}
				reported = sum
			}
		}
	}
}

func (r *Runner) complete(ctx context.Context, a *attempt) {
	res := a.h.Wait()
	masked := a.out.finish()
	sum, err := a.w.Close()
	if err != nil {
		r.log.Warn("closing attempt log", "run", a.ref.RunID, "attempt", a.ref.Number, "err", err)
	}
	if !a.running && res.Status == run.AttemptSucceeded {
		// A starting attempt cannot end succeeded; be honest about why.
		res.Status, res.ErrorClass, res.Message = run.AttemptFailed, run.ErrorInternal, "the process exited 0, but its running state could not be recorded"
	}
	r.mu.Lock()
	reason := cmp.Or(shutdownReason(a, res.Status), res.Reason) // shutdown, oom
	r.mu.Unlock()
	r.finish(ctx, a.ref, edge.AttemptResult{
		Reason:       reason,
		Status:       res.Status,
		ExitCode:     res.ExitCode,
		ErrorClass:   res.ErrorClass,
		Message:      res.Message,
		LogSize:      sum.Bytes,
		LogTruncated: sum.Truncated,
		MaskedCount:  masked,
		FinishedAtMs: res.FinishedAt.UnixMilli(),
	})
	r.removeIdentity(a.ref)
	r.mu.Lock()
	delete(r.active, a.ref)
	r.notifyLocked()
	r.mu.Unlock()
	r.kick()
}

// finish records an attempt's end, retrying transient store errors a few
// times. If it still fails, the attempt stays starting/running in the store
// and the next start's recovery ends it as lost: never forgotten.
func (r *Runner) finish(ctx context.Context, ref edge.AttemptRef, res edge.AttemptResult) {
	defer r.notify()
	var err error
	for try := 1; try <= finishTries; try++ {
		wctx, cancel := context.WithTimeout(ctx, storeWriteTimeout)
		var fin edge.FinishResult
		fin, err = r.store.FinishAttempt(wctx, ref, res)
		cancel()
		if err == nil {
			// One line per Run transition: the attempt's end moves the Run
			// to its terminal status or to retry_wait.
			r.log.Info("attempt finished", "run", ref.RunID, "attempt", ref.Number, "status", string(res.Status),
				"class", string(res.ErrorClass), "runStatus", string(fin.Run.Status))
			return
		}
		if c := errs.Code(err); c == errs.Conflict || c == errs.Invalid || c == errs.NotFound {
			break // not transient
		}
		t := r.clock.NewTimer(time.Duration(try) * time.Second)
		<-t.C()
	}
	r.log.Error("recording attempt result", "run", ref.RunID, "attempt", ref.Number, "status", string(res.Status), "err", err)
}

// enforceCancels stops running attempts whose run has a cancel request.
func (r *Runner) enforceCancels(ctx context.Context) {
	runs, err := r.store.ListCancelRequested(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("listing cancel requests", "err", err)
		}
		return
	}
	for _, cr := range runs {
		r.mu.Lock()
		a := r.active[edge.AttemptRef{RunID: cr.ID, Number: cr.AttemptCount}]
		r.mu.Unlock()
		if a != nil {
			a.h.Stop(run.AttemptCancelled, run.ErrorCancelledByUser, cancelMessage(cr))
		}
	}
}
