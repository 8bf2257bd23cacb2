// Package executor runs one attempt of a task as a local process. It is the
// one executor of both binaries: ql3-edge runs its attempts with it and
// ql3-worker the attempts it leases (DESIGN.md §1: the edge's one sideways
// import). It links only the standard library, core's errs, run and spec
// (SpecFor maps a task spec onto a process), and worker/clock.
//
// Each attempt gets its own process group (Setpgid), stdin from /dev/null
// and one pipe shared by stdout and stderr, drained into the caller's writer
// for as long as the group lives (the child never blocks on a full pipe).
//
// Ending an attempt (timeout, cancel, shutdown) sends SIGTERM to the whole
// group, then SIGKILL after a grace period (default 10 s). Whatever way the
// group leader exits, the executor waits for it without reaping it (so its
// pid, which is also the group id, cannot be reused), SIGKILLs the group so
// backgrounded grandchildren do not outlive the attempt, and only then reaps
// it. Processes that leave the group (setsid, double fork) are found and
// killed too: the process is a child subreaper, so every descendant stays
// ours, and those carrying the attempt's markers are signalled with the
// group and reaped when they die (ADR 0017; reaper_linux.go). The drain of
// the output pipe is bounded (DrainTimeout) for what no search can find (a
// descendant that dropped its environment and left the group).
//
// Where the host offers a writable cgroup (v2, the v1 pids/memory/freezer
// hierarchies, or both), each attempt is born in its own cgroup with the
// spec's process and memory limits, and ending it ends the whole group
// (cgroup.kill or freeze-kill-thaw), so nothing escapes at all; going over
// the memory limit ends it failed with Reason "oom" (ADR 0041;
// cgroup_*.go). Containment says which is in force.
//
// Environment: only the variables named in Config.PassEnv are taken from the
// server's own environment (default: PATH, HOME, USER, LOGNAME, SHELL, LANG,
// LC_ALL, LC_CTYPE, LC_MESSAGES, TZ, TMPDIR; PATH falls back to a standard
// list when unset), so server credentials never leak into tasks. The spec's
// environment is applied on top, and the QL3_* variables last: QL3_RUN_ID,
// QL3_ATTEMPT, QL3_TASK_ID, QL3_TASK_REVISION, QL3_TASK_NAME (when known) and
// QL3_SCHEDULED_FOR (RFC 3339, UTC). QL3_RUN_ID + QL3_ATTEMPT also mark the
// processes of an attempt so crash recovery can find them (FindProcesses).
//
// Working directory: a relative or empty spec directory is resolved inside
// the task's own directory <WorkRoot>/<taskID> (created 0700 on first use);
// an absolute one is used as is and must exist.
//
// Concurrency: at most Config.MaxConcurrent attempts run at once (default
// min(4, 2×NumCPU), hard limit 256); callers take a Slot before Start.
//
// Process handling is Linux-specific (/proc, waitid); on other systems New
// returns an error.
package executor

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/worker/clock"
)

// Defaults and limits.
const (
	DefaultKillGrace    = 10 * time.Second
	DefaultDrainTimeout = 5 * time.Second
	HardMaxConcurrent   = 256
	defaultPath         = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// DefaultPassEnv lists the server variables a task inherits.
var DefaultPassEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR"}

// DefaultMaxConcurrent is min(4, 2×NumCPU).
func DefaultMaxConcurrent() int { return min(4, 2*runtime.NumCPU()) }

// Config configures an Executor.
type Config struct {
	WorkRoot      string        // required: parent of the per-task working directories
	MaxConcurrent int           // 0 → DefaultMaxConcurrent(); 1..HardMaxConcurrent
	KillGrace     time.Duration // SIGTERM → SIGKILL; 0 → DefaultKillGrace
	DrainTimeout  time.Duration // output drain after the group is gone; 0 → DefaultDrainTimeout
	PassEnv       []string      // nil → DefaultPassEnv
	// LookupEnv reads the server environment; nil → os.LookupEnv.
	LookupEnv func(string) (string, bool)
	Clock     Clock // nil → clock.Real{}
	Logger    *slog.Logger
	// NoCgroups keeps attempts out of cgroups even where the host offers
	// them (process groups, markers and the subreaper only; ADR 0017).
	NoCgroups bool
}

// Spec is what to execute: exactly one of Argv or ShellCommand.
type Spec struct {
	Argv         []string // Argv[0] is the file: a path, or a name looked up in the task's PATH
	ShellCommand string
	Shell        string // interpreter for ShellCommand: /bin/sh (default) or /bin/bash
	Env          map[string]string
	WorkDir      string
	Timeout      time.Duration // ≤ 0: no timeout
	// Limits of the attempt's cgroup (ADR 0041); 0 takes the default
	// (DefaultMaxProcesses; half the machine's memory). Not enforced
	// where the host offers no cgroup (Containment says so).
	MaxProcesses int
	MemoryBytes  int64
}

// Request is one attempt to start.
type Request struct {
	RunID        string
	Attempt      int
	TaskID       string
	TaskRevision int64
	TaskName     string
	ScheduledFor time.Time
	Spec         Spec
	// ExtraEnv are QL3_* variables the binary adds for this attempt (the
	// edge: sendNotify's QL3_NOTIFY_URL and the Run's QL3_NOTIFY_TOKEN);
	// applied with the other QL3_* variables, after the spec's environment.
	// Every name must start with QL3_ and must not be one of those above.
	ExtraEnv map[string]string
	// DepsDir, when set, is the project's deps directory (ADR 0062):
	// the process gets QL3_DEPS_DIR, the venv's bin ahead of PATH and its
	// node_modules ahead of NODE_PATH.
	DepsDir string
	// Output receives stdout and stderr merged, in the order the attempt
	// wrote them (one pipe for both), from one goroutine, in chunks of at
	// most 32 KiB. Its Write must not block for long; errors are ignored
	// (the pipe is drained regardless). Nothing is buffered here: wrap the
	// sink (a log file, a spool) in a CapWriter for the size cap.
	Output io.Writer
}

// ID is the executor's key for an attempt ("<runID>/<attempt>").
func (r Request) ID() string { return AttemptID(r.RunID, r.Attempt) }

// AttemptID builds the key Cancel and Lookup take.
func AttemptID(runID string, attempt int) string { return runID + "/" + strconv.Itoa(attempt) }

// Result is how an attempt ended.
type Result struct {
	Status     run.AttemptStatus // succeeded, failed, timed_out, cancelled or lost
	ErrorClass run.ErrorClass    // "" when succeeded
	ExitCode   *int              // nil when the leader died of a signal or never started
	Signal     string            // the signal that ended the leader, e.g. "killed"
	Reason     string            // ReasonOOM when the memory limit ended it; "" otherwise
	Message    string            // short, for humans; never output
	StartedAt  time.Time
	FinishedAt time.Time
}

// ReasonOOM is Result.Reason of an attempt whose memory went over its
// cgroup's limit (the kernel's OOM killer ended a process of it).
const ReasonOOM = "oom"

// Executor starts attempts. It is safe for concurrent use.
type Executor struct {
	cfg   Config
	slots chan struct{}
	cg    *cgroupHost // nil: no cgroup containment
	// cgSkipV2 keeps attempt groups out of the v2 hierarchy (tests of the
	// v1-only path on a hybrid host).
	cgSkipV2 bool

	mu      sync.Mutex
	running map[string]*Handle
	wg      sync.WaitGroup
}

// New validates cfg and creates the work root.
func New(cfg Config) (*Executor, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if cfg.WorkRoot == "" {
		return nil, errs.Invalidf("executor.workRoot", "must be set")
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent()
	}
	if cfg.MaxConcurrent < 1 || cfg.MaxConcurrent > HardMaxConcurrent {
		return nil, errs.Invalidf("executor.maxConcurrent", "must be 1..%d, got %d", HardMaxConcurrent, cfg.MaxConcurrent)
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.KillGrace < 0 {
		return nil, errs.Invalidf("executor.killGrace", "must not be negative")
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.DrainTimeout < 0 {
		return nil, errs.Invalidf("executor.drainTimeout", "must not be negative")
	}
	if cfg.PassEnv == nil {
		cfg.PassEnv = DefaultPassEnv
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.WorkRoot, 0o700); err != nil {
		return nil, fmt.Errorf("executor: create work root: %w", err)
	}
	if err := becomeSubreaper(); err != nil {
		cfg.Logger.Warn("cannot become a child subreaper; descendants that leave their process group are found by their markers only", "err", err)
	}
	e := &Executor{
		cfg:     cfg,
		slots:   make(chan struct{}, cfg.MaxConcurrent),
		running: make(map[string]*Handle),
	}
	if !cfg.NoCgroups {
		e.cg = cgroups()
	}
	if notes := ContainmentNotes(); notes != "" && !cfg.NoCgroups {
		cfg.Logger.Info("attempt containment", "mode", e.Containment(), "notes", notes)
	} else {
		cfg.Logger.Info("attempt containment", "mode", e.Containment())
	}
	return e, nil
}

// Containment describes how this executor contains attempts (logged by
// New; the edge reports it in /readyz).
func (e *Executor) Containment() string {
	if e.cfg.NoCgroups {
		return "none: process groups, markers and the subreaper only (cgroups turned off)"
	}
	return Containment()
}

// KillGrace is the configured SIGTERM → SIGKILL grace.
func (e *Executor) KillGrace() time.Duration { return e.cfg.KillGrace }

// MaxConcurrent is the global limit.
func (e *Executor) MaxConcurrent() int { return e.cfg.MaxConcurrent }

// Slot is one unit of the global concurrency limit. It is consumed by Start
// (and freed when the attempt ends) or given back with Release.
type Slot struct {
	e    *Executor
	once sync.Once
}

// TryAcquire takes a slot if one is free.
func (e *Executor) TryAcquire() (*Slot, bool) {
	select {
	case e.slots <- struct{}{}:
		return &Slot{e: e}, true
	default:
		return nil, false
	}
}

// Release gives an unused slot back. Safe to call more than once.
func (s *Slot) Release() {
	s.once.Do(func() { <-s.e.slots })
}

// Lookup returns the handle of a running attempt.
func (e *Executor) Lookup(runID string, attempt int) (*Handle, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.running[AttemptID(runID, attempt)]
	return h, h != nil // nil: reserved by a Start that is still spawning
}

// Cancel ends a running attempt as cancelled (cancelled_by_user): SIGTERM
// to its group, SIGKILL after the grace. It reports whether the attempt was
// running here.
func (e *Executor) Cancel(runID string, attempt int, message string) bool {
	h, ok := e.Lookup(runID, attempt)
	if ok {
		h.Stop(run.AttemptCancelled, run.ErrorCancelledByUser, message)
	}
	return ok
}

// Running is the number of attempts currently running.
func (e *Executor) Running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// Wait blocks until every started attempt has finished and its goroutines
// have returned.
func (e *Executor) Wait() { e.wg.Wait() }

// StartError is returned by Start when no process could be created; the
// attempt ends with error class executor_start.
type StartError struct{ Err error }

func (e *StartError) Error() string { return "executor: start: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// environment builds the child's environment (see the package doc).
func (e *Executor) environment(req Request) ([]string, error) {
	env := make(map[string]string, len(e.cfg.PassEnv)+len(req.Spec.Env)+6)
	for _, name := range e.cfg.PassEnv {
		if strings.HasPrefix(name, "QL3_") {
			continue
		}
		if v, ok := e.cfg.LookupEnv(name); ok {
			env[name] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = defaultPath
	}
	for k, v := range req.Spec.Env {
		if strings.HasPrefix(k, "QL3_") {
			return nil, errs.Invalidf("environment."+k, "the QL3_ prefix is reserved")
		}
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, errs.Invalidf("environment", "variable names must be non-empty without '=' or NUL, values without NUL")
		}
		env[k] = v
	}
	if req.DepsDir != "" {
		depsEnv(env, req.DepsDir)
	}
	env["QL3_RUN_ID"] = req.RunID
	env["QL3_ATTEMPT"] = strconv.Itoa(req.Attempt)
	env["QL3_TASK_ID"] = req.TaskID
	env["QL3_TASK_REVISION"] = strconv.FormatInt(req.TaskRevision, 10)
	if req.TaskName != "" {
		env["QL3_TASK_NAME"] = req.TaskName
	}
	if !req.ScheduledFor.IsZero() {
		env["QL3_SCHEDULED_FOR"] = req.ScheduledFor.UTC().Format(time.RFC3339)
	}
	for k, v := range req.ExtraEnv {
		if _, set := env[k]; set || !strings.HasPrefix(k, "QL3_") || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, errs.Invalidf("extraEnv."+k, "must be a QL3_ name the executor does not set itself, its value without NUL")
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out, nil
}

// workDir resolves the attempt's working directory (see the package doc).
func (e *Executor) workDir(req Request) (string, error) {
	if filepath.IsAbs(req.Spec.WorkDir) {
		st, err := os.Stat(req.Spec.WorkDir)
		if err != nil {
			return "", err
		}
		if !st.IsDir() {
			return "", fmt.Errorf("working directory %s is not a directory", req.Spec.WorkDir)
		}
		return req.Spec.WorkDir, nil
	}
	if !validTaskDirName(req.TaskID) {
		return "", errs.Invalidf("taskId", "unusable as a directory name")
	}
	rel := filepath.Clean(req.Spec.WorkDir)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", errs.Invalidf("workingDirectory", "a relative directory must stay inside the task directory")
	}
	dir := filepath.Join(e.cfg.WorkRoot, req.TaskID, rel)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

func validTaskDirName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// resolveFile finds argv[0] like execvp, but in the task's PATH.
func resolveFile(file, dir string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return file, checkExecutable(file)
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		candidate := filepath.Join(d, file)
		if checkExecutable(candidate) == nil {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH", file)
}

func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}
