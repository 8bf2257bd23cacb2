package agent

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/worker/executor"
)

// ExecRunner runs attempts with worker/executor, the executor the edge
// shares.
type ExecRunner struct{ E *executor.Executor }

// Start acquires a slot and spawns.
func (r ExecRunner) Start(l Launch) (Process, error) {
	slot, ok := r.E.TryAcquire()
	if !ok {
		return nil, fmt.Errorf("%w: every executor slot is taken", ErrNeverStarted)
	}
	sp := executor.SpecFor(l.Spec, l.Timeout)
	sp.Env = l.Env
	h, err := r.E.Start(slot, executor.Request{
		RunID: l.RunID, Attempt: l.Attempt, TaskID: dirName(l.TaskID), TaskRevision: l.TaskRevision,
		ScheduledFor: l.ScheduledFor, Spec: sp, Output: l.Output, ExtraEnv: l.ExtraEnv, DepsDir: l.DepsDir,
	})
	if err != nil {
		var se *executor.StartError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: %v", ErrNeverStarted, se.Err)
		}
		return nil, err
	}
	return execProcess{h}, nil
}

// TerminateSurvivors ends the marked processes of an attempt.
func (r ExecRunner) TerminateSurvivors(ctx context.Context, runID string, attempt int, process string) (int, error) {
	var leader executor.Identity
	if process != "" {
		id, err := executor.ParseIdentity(process)
		if err == nil {
			leader = id
		}
	}
	rep, err := r.E.TerminateOrphans(ctx, runID, attempt, leader)
	return rep.Remaining, err
}

// BootID is the kernel's boot id.
func (ExecRunner) BootID() string { return executor.BootID() }

// dirName maps a task id ([A-Za-z0-9._:-]) onto the executor's task
// directory alphabet.
func dirName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte("r"), b...)
	}
	return string(b)
}

type execProcess struct{ h *executor.Handle }

func (p execProcess) Identity() string      { return p.h.Identity().String() }
func (p execProcess) Done() <-chan struct{} { return p.h.Done() }

func (p execProcess) Stop(reason StopReason) {
	if reason == StopCancel {
		p.h.Stop(run.AttemptCancelled, run.ErrorCancelledByUser, "cancelled by the authority")
		return
	}
	p.h.Stop(run.AttemptLost, run.ErrorWorkerLost, "stopped by the worker: its lease is gone")
}

// Kill SIGKILLs the group and its marked descendants at once (the second
// signal).
func (p execProcess) Kill() {
	p.h.Kill(run.AttemptLost, run.ErrorWorkerLost, "killed: the worker was told to exit")
}

func (p execProcess) Result() Outcome {
	r := p.h.Wait()
	return Outcome{Status: r.Status, ErrorClass: r.ErrorClass, ExitCode: r.ExitCode,
		Signal: signalName(r.Signal), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

// signals maps the per-architecture signal numbers to their names (mips
// numbers differ from x86 and arm).
var signals = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
	syscall.SIGURG: "SIGURG", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ",
	syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF", syscall.SIGWINCH: "SIGWINCH",
	syscall.SIGIO: "SIGIO", syscall.SIGPWR: "SIGPWR", syscall.SIGSYS: "SIGSYS",
}

// signalName turns the executor's description ("killed") into the wire
// form ("SIGKILL"); an unknown description becomes "SIGUNKNOWN".
func signalName(desc string) string {
	if desc == "" {
		return ""
	}
	for sig, name := range signals {
		if sig.String() == desc {
			return name
		}
	}
	return "SIGUNKNOWN"
}
