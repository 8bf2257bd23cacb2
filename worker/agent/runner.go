package agent

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

// Runner is the process executor as the agent uses it (worker/executor in
// production, a fake in the journal crash tests).
type Runner interface {
	// Start spawns one attempt. An error wrapping ErrNeverStarted means no
	// process was created (the attempt fails as executor_start); any other
	// error is ambiguous and is treated as a started-then-lost process.
	Start(l Launch) (Process, error)
	// TerminateSurvivors ends the marked processes of an attempt left by an
	// earlier worker process of this boot (restart recovery) and returns
	// how many are still alive. process is what Process.Identity returned
	// ("" when the spawn was never recorded).
	TerminateSurvivors(ctx context.Context, runID string, attempt int, process string) (remaining int, err error)
	// BootID names the current kernel boot ("" when unknown).
	BootID() string
}

// ErrNeverStarted marks a start error after which no process exists.
var ErrNeverStarted = errors.New("the process was not started")

// Launch is one attempt to spawn.
type Launch struct {
	RunID   string
	Attempt int
	// TaskID names the working directory for relative paths (one per
	// task, as on the edge: a script's state there survives edits of the
	// task) and, with TaskRevision and ScheduledFor, the process's
	// QL3_TASK_ID, QL3_TASK_REVISION and QL3_SCHEDULED_FOR.
	TaskID       string
	TaskRevision int64
	ScheduledFor time.Time
	Spec         spec.Command
	Timeout      time.Duration
	Output       io.Writer // stdout and stderr, interleaved

	// Env is the process's environment from the spec and the env store
	// (processEnv); it replaces Spec.Environment.
	Env map[string]string

	// ExtraEnv are the QL3_* variables of a script task (QL3_SCRIPT,
	// QL3_SCRIPTS_DIR).
	ExtraEnv map[string]string

	// DepsDir is the project's deps directory ("" for none, ADR 0062).
	DepsDir string
}

// StopReason says why the agent stops a process.
type StopReason int

// Stop reasons: Cancel is the authority's cancel (a cancelled completion
// follows); Fence is the worker's own stop (lease lapsed or revoked, drain
// deadline, session lost: no completion follows).
const (
	StopCancel StopReason = iota + 1
	StopFence
)

// Process is a started attempt.
type Process interface {
	Identity() string
	Done() <-chan struct{}
	// Result is valid after Done.
	Result() Outcome
	// Stop ends the group: SIGTERM, then SIGKILL after the executor's
	// grace. Only the first call counts.
	Stop(reason StopReason)
	// Kill sends SIGKILL to the group now (second signal).
	Kill()
}

// Outcome is how a process ended.
type Outcome struct {
	Status     run.AttemptStatus // succeeded, failed, timed_out, cancelled, or lost (fenced)
	ErrorClass run.ErrorClass
	ExitCode   *int
	Signal     string // "SIGKILL" form, "" when exited
	StartedAt  time.Time
	FinishedAt time.Time
}
