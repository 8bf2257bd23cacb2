package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/edge/runner"
	"github.com/ql3/ql3/edge/scheduler"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
)

// runnerSafetyPoll is the runner's fallback poll in the server.
const runnerSafetyPoll = time.Minute

// edgeTaskProbe is the cheapest read that proves the database answers.
var edgeTaskProbe = edge.TaskFilter{Limit: 1}

// Hooks let end-to-end tests observe the loops; all optional.
type Hooks struct {
	// SchedulerSleep is called whenever the scheduler goes to sleep, with
	// the time it will wake at unless woken earlier.
	SchedulerSleep func(until time.Time)
}

type engineConfig struct {
	Store          *sqlite.Store
	Logs           *logstore.Store
	Clock          clock.Clock
	Logger         *slog.Logger
	WorkRoot       string
	StateDir       string
	MaxConcurrency int
	KillGrace      time.Duration
	DrainGrace     time.Duration
	Hooks          Hooks
	AttemptEnv     runner.AttemptEnvFunc // sendNotify's variables (notify.go)
	Scripts        *runner.Scripts       // the scripts folder and the task helper (ADR 0044)
}

// engine runs the runner and the scheduler. The runner recovers in-flight
// attempts of a previous process before the scheduler admits anything new.
type engine struct {
	sched  *scheduler.Scheduler
	runner *runner.Runner
	exec   *executor.Executor

	wg       sync.WaitGroup
	mu       sync.Mutex
	loopErrs []error
}

func startEngine(ctx context.Context, cfg engineConfig) (*engine, error) {
	exec, err := executor.New(executor.Config{
		WorkRoot:      cfg.WorkRoot,
		MaxConcurrent: cfg.MaxConcurrency,
		KillGrace:     cfg.KillGrace,
		Clock:         cfg.Clock,
		Logger:        cfg.Logger.With("component", "executor"),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the executor: %w", err)
	}
	rn, err := runner.New(runner.Config{
		Store:    cfg.Store,
		Executor: exec,
		Logs:     cfg.Logs,
		StateDir: cfg.StateDir,
		Clock:    cfg.Clock,
		Logger:   cfg.Logger.With("component", "runner"),
		// Every change that makes a run due signals the runner (this
		// process is the data directory's only writer, ADR 0021) and the
		// earliest not-before time is a timer, so the poll is only a
		// safety net. At the runner's 5 s default it was the one thing
		// that woke an idle edge, paging SQLite's code back in each time.
		PollInterval: runnerSafetyPoll,
		Envs:         cfg.Store, // the env store (ADR 0038), unlocked before the engine starts
		DrainGrace:   cfg.DrainGrace,
		AttemptEnv:   cfg.AttemptEnv,
		Scripts:      cfg.Scripts,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the runner: %w", err)
	}
	// Settle what a previous process left running before anything new is
	// admitted or started: those attempts become lost (retried per policy).
	rep, err := rn.Recover(ctx)
	if err != nil {
		return nil, err
	}
	if rep.InFlight > 0 {
		cfg.Logger.Warn("recovered attempts of a previous process", "inFlight", rep.InFlight,
			"terminated", rep.Terminated, "unkillable", rep.Unkillable, "recorded", rep.Recorded)
	}
	sched, err := scheduler.New(scheduler.Config{
		Store:   cfg.Store,
		Clock:   cfg.Clock,
		Changes: cfg.Store.SchedulesChanged(),
		OnSleep: cfg.Hooks.SchedulerSleep,
		Logger:  cfg.Logger.With("component", "scheduler"),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the scheduler: %w", err)
	}
	e := &engine{sched: sched, runner: rn, exec: exec}
	e.loop(ctx, "runner", rn.Run)
	e.loop(ctx, "scheduler", sched.Run)
	return e, nil
}

// loop runs fn until ctx ends; an early return is recorded and makes the
// process unready (the loops only return on ctx end by contract).
func (e *engine) loop(ctx context.Context, name string, fn func(context.Context) error) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		err := fn(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			e.mu.Lock()
			e.loopErrs = append(e.loopErrs, fmt.Errorf("%s stopped: %w", name, err))
			e.mu.Unlock()
		}
	}()
}

// ready reports a loop that stopped unexpectedly.
func (e *engine) ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.loopErrs...)
}

// stop waits for the loops (their context is already cancelled; the
// runner drains: running attempts may finish for the drain grace, the rest
// are stopped and recorded cancelled, reason shutdown) and for the
// executor's process watchers.
func (e *engine) stop() error {
	e.wg.Wait()
	e.exec.Wait()
	return e.ready()
}
