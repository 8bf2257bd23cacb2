//go:build linux

package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
	"unsafe"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
)

func supported() error { return nil }

// Start spawns the attempt. It consumes slot: on success the slot is freed
// when the attempt ends, on error at once. Errors are *StartError (the
// attempt ends as failed/executor_start) or errs.Conflict when the attempt is
// already running here.
func (e *Executor) Start(slot *Slot, req Request) (*Handle, error) {
	if slot == nil || slot.e != e {
		return nil, errs.Invalidf("slot", "a slot of this executor is required")
	}
	id := req.ID()
	e.mu.Lock()
	if _, dup := e.running[id]; dup {
		e.mu.Unlock()
		slot.Release()
		return nil, errs.Conflictf("attempt %s is already running", id)
	}
	// Reserve the id before spawning so a concurrent Start of the same
	// attempt cannot spawn a second process.
	e.running[id] = nil
	e.mu.Unlock()

	h, err := e.spawn(slot, req)
	e.mu.Lock()
	if err != nil {
		delete(e.running, id)
	} else {
		e.running[id] = h
	}
	e.mu.Unlock()
	if err != nil {
		slot.Release()
		return nil, err
	}
	// Arm the timeout before Start returns: whoever observes the attempt as
	// started (and steps a fake clock) finds its timer in place.
	if to := req.Spec.Timeout; to > 0 {
		h.timeout = e.cfg.Clock.NewTimer(to)
	}
	e.wg.Add(2)
	go h.supervise()
	return h, nil
}

func (e *Executor) spawn(slot *Slot, req Request) (*Handle, error) {
	sp := req.Spec
	if (len(sp.Argv) == 0) == (sp.ShellCommand == "") {
		return nil, &StartError{Err: errors.New("exactly one of argv and shell command is required")}
	}
	env, err := e.environment(req)
	if err != nil {
		return nil, &StartError{Err: err}
	}
	dir, err := e.workDir(req)
	if err != nil {
		return nil, &StartError{Err: fmt.Errorf("working directory: %w", err)}
	}
	var path string
	var args []string
	if len(sp.Argv) > 0 {
		if path, err = resolveFile(sp.Argv[0], dir, env); err != nil {
			return nil, &StartError{Err: err}
		}
		args = append([]string(nil), sp.Argv...)
	} else {
		shell := sp.Shell
		if shell == "" {
			shell = "/bin/sh"
		}
		if shell != "/bin/sh" && shell != "/bin/bash" {
			return nil, &StartError{Err: fmt.Errorf("shell %q is not supported (use /bin/sh or /bin/bash)", shell)}
		}
		path, args = shell, []string{shell, "-c", sp.ShellCommand}
	}

	r, w, err := os.Pipe()
	if err != nil {
		return nil, &StartError{Err: fmt.Errorf("output pipe: %w", err)}
	}
	build := func() *exec.Cmd {
		return &exec.Cmd{
			Path:        path,
			Args:        args,
			Env:         env,
			Dir:         dir,
			Stdout:      w, // one *os.File for both: passed to the child directly, no copier goroutines
			Stderr:      w,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		}
	}
	var cg *attemptGroup
	if e.cg != nil {
		if cg, err = e.cg.newGroup(sp.MaxProcesses, sp.MemoryBytes, e.cgSkipV2); err != nil {
			w.Close()
			r.Close()
			return nil, &StartError{Err: err}
		}
	}
	var cmd *exec.Cmd
	if cg != nil {
		cmd, err = cg.start(build)
	} else {
		cmd = build()
		err = cmd.Start()
	}
	w.Close() // the child holds its own copy; EOF arrives when the whole group has closed it
	if err != nil {
		if cmd != nil && cmd.Process != nil { // started, but could not be placed
			cg.killAll()
			_, _ = cmd.Process.Wait()
		}
		if cg != nil {
			cg.remove()
		}
		r.Close()
		return nil, &StartError{Err: err}
	}
	pid := cmd.Process.Pid
	addLeader(pid)
	ident, err := ReadIdentity(pid)
	if err != nil {
		// The child is our unreaped child, so /proc/<pid> exists; failing to
		// read it is an environment problem. Still record what we know.
		ident = Identity{PID: pid, PGID: pid}
	}
	h := &Handle{
		e:         e,
		req:       req,
		id:        req.ID(),
		ident:     ident,
		startedAt: e.cfg.Clock.Now(),
		slot:      slot,
		stopCh:    make(chan struct{}),
		killCh:    make(chan struct{}),
		done:      make(chan struct{}),
		cmd:       cmd,
		out:       r,
		cg:        cg,
	}
	e.cfg.Logger.Debug("attempt started", "run", req.RunID, "attempt", req.Attempt, "pid", pid)
	return h, nil
}

// supervise waits for the leader, enforces timeout and stop requests, kills
// leftovers of the group, drains the output and publishes the result.
func (h *Handle) supervise() {
	defer h.e.wg.Done()
	drained := make(chan struct{})
	go func() {
		defer h.e.wg.Done()
		defer close(drained)
		drain(h.out, h.req.Output)
	}()
	exited := make(chan error, 1)
	go func() { exited <- waitNoReap(h.ident.PID) }()

	// Orphans re-parented to us (we are a subreaper) become our zombies
	// when they die: reap them as they go, not only when the attempt ends.
	sigchld := make(chan os.Signal, 1)
	if reaper.active {
		signal.Notify(sigchld, syscall.SIGCHLD)
		defer signal.Stop(sigchld)
	}

	clk := h.e.cfg.Clock
	var timeoutC, killC <-chan time.Time
	if h.timeout != nil {
		defer h.timeout.Stop()
		timeoutC = h.timeout.C()
	}
	stopCh, killNowC := h.stopCh, h.killCh
	var acted *stopRequest // the stop we signalled the group for, before the leader exited
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case <-sigchld:
			reapAdopted()
		case <-timeoutC:
			timeoutC = nil
			h.Stop(run.AttemptTimedOut, run.ErrorTimeout, fmt.Sprintf("timeout of %s elapsed", h.req.Spec.Timeout))
		case <-killNowC:
			killNowC, stopCh, killC = nil, nil, nil
			acted = h.stopRequest() // Kill stops first: never nil here
			h.signalAttempt(syscall.SIGKILL)
		case <-stopCh:
			stopCh = nil
			acted = h.stopRequest()
			if h.killRequested() {
				killNowC, killC = nil, nil
				h.signalAttempt(syscall.SIGKILL)
			} else if h.e.cfg.KillGrace > 0 {
				h.signalAttempt(syscall.SIGTERM)
				t := clk.NewTimer(h.e.cfg.KillGrace)
				defer t.Stop()
				killC = t.C()
			} else {
				h.signalAttempt(syscall.SIGKILL)
			}
		case <-killC:
			killC = nil
			h.signalAttempt(syscall.SIGKILL)
		}
	}
	// The leader has exited but is not reaped: its pid (= the group id)
	// cannot be reused yet, so this reaches only the attempt's own leftovers:
	// its group, then its marked descendants wherever they went (unless a
	// cheap check proves there can be none: the common case, no /proc
	// scan). All of it before the leader is reaped: after that, its pid may
	// name another attempt's group.
	oom := h.cg != nil && h.cg.oomKilled()
	h.signalGroup(syscall.SIGKILL)
	switch {
	case h.cg != nil:
		// Everything the attempt started is in its cgroup, whatever it
		// did with sessions, groups, forks and its environment.
		if !h.cg.killAll() {
			h.e.cfg.Logger.Warn("processes of the attempt outlived SIGKILL", "run", h.req.RunID, "attempt", h.req.Attempt, "cgroup", h.cg.name)
		}
	case !h.nothingLeft():
		h.awaitAttemptGone(h.signalAttempt(syscall.SIGKILL))
	}
	if waitErr != nil {
		h.e.cfg.Logger.Warn("waiting for attempt leader failed", "run", h.req.RunID, "attempt", h.req.Attempt, "err", waitErr)
	}
	state, _ := h.cmd.Process.Wait()
	removeLeader(h.ident.PID)
	finishedAt := clk.Now()
	reapAdopted()
	if h.cg != nil {
		h.cg.remove()
	}

	select {
	case <-drained:
	default:
		// Something outside the group still holds the pipe; bound the wait.
		t := clk.NewTimer(h.e.cfg.DrainTimeout)
		select {
		case <-drained:
		case <-t.C():
			h.out.Close() // unblocks the reader
			<-drained
		}
		t.Stop()
	}
	h.out.Close()
	res := h.buildResult(state, acted, finishedAt)
	if oom && acted == nil {
		res.Status, res.ErrorClass, res.Reason = run.AttemptFailed, run.ErrorProcessExit, ReasonOOM
		res.Message = fmt.Sprintf("out of memory: the attempt went over its memory limit of %d bytes", h.cg.memory)
		if h.req.Output != nil {
			_, _ = fmt.Fprintf(h.req.Output, "\n[ql3: %s]\n", res.Message)
		}
	}
	h.finish(res)
}

func (h *Handle) buildResult(state *os.ProcessState, acted *stopRequest, finishedAt time.Time) Result {
	res := Result{StartedAt: h.startedAt, FinishedAt: finishedAt}
	if state != nil {
		ws, _ := state.Sys().(syscall.WaitStatus)
		switch {
		case ws.Exited():
			code := ws.ExitStatus()
			res.ExitCode = &code
		case ws.Signaled():
			res.Signal = ws.Signal().String()
		}
	}
	switch {
	case acted != nil:
		res.Status, res.ErrorClass, res.Message = acted.status, acted.class, acted.message
	case state == nil:
		res.Status, res.ErrorClass, res.Message = run.AttemptFailed, run.ErrorInternal, "the process could not be waited for"
	case res.ExitCode != nil && *res.ExitCode == 0:
		res.Status = run.AttemptSucceeded
	case res.ExitCode != nil:
		res.Status, res.ErrorClass, res.Message = run.AttemptFailed, run.ErrorProcessExit, fmt.Sprintf("exit status %d", *res.ExitCode)
	default:
		res.Status, res.ErrorClass, res.Message = run.AttemptFailed, run.ErrorProcessExit, "killed by signal: "+res.Signal
	}
	return res
}

func (h *Handle) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-h.ident.PGID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		h.e.cfg.Logger.Warn("signal attempt group", "run", h.req.RunID, "attempt", h.req.Attempt, "signal", sig.String(), "err", err)
	}
}

// signalAttempt signals the attempt's group and every marked descendant
// outside it (setsid, double fork: ADR 0017). It returns the processes of
// the attempt that were alive when looked for.
func (h *Handle) signalAttempt(sig syscall.Signal) []Identity {
	h.signalGroup(sig)
	if h.cg != nil {
		// The cgroup holds every process of the attempt: no /proc search.
		if sig == syscall.SIGKILL {
			h.cg.killAll()
		} else {
			h.cg.signalMembers(sig)
		}
		return nil
	}
	procs, err := attemptProcesses(h.req.RunID, h.req.Attempt, h.ident.PGID)
	if err != nil {
		h.e.cfg.Logger.Warn("listing the attempt's processes", "run", h.req.RunID, "attempt", h.req.Attempt, "err", err)
	}
	// A process found once stays the attempt's (its start time names it),
	// even if a later scan misses it (its marker unreadable for a moment).
	if h.seen == nil {
		h.seen = make(map[int]Identity)
	}
	found := make(map[int]bool, len(procs))
	for _, p := range procs {
		h.seen[p.PID] = p
		found[p.PID] = true
	}
	for pid, p := range h.seen {
		switch {
		case !p.Alive():
			delete(h.seen, pid)
		case !found[pid]:
			procs = append(procs, p)
		}
	}
	for _, p := range procs {
		if p.PGID == h.ident.PGID {
			continue // the group signal reached it
		}
		// Alive re-checks the start time right before the signal, so a pid
		// reused since the scan is left alone.
		if p.Alive() {
			if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				h.e.cfg.Logger.Warn("signal attempt process", "run", h.req.RunID, "attempt", h.req.Attempt, "pid", p.PID, "signal", sig.String(), "err", err)
			}
		}
	}
	return procs
}

// awaitAttemptGone waits, briefly and boundedly, until no live process of
// the attempt is left after the SIGKILL, killing again whatever it still
// finds (a descendant may have forked between scan and signal): a killed
// process is still visible for a moment while the kernel tears it down,
// and callers (replace policy, crash-safety tests) rely on "done" meaning
// "gone". left is what the last SIGKILL found alive: when nothing was (the
// common case), no further scan is needed. Zombies count as gone;
// reapAdopted reaps ours.
func (h *Handle) awaitAttemptGone(left []Identity) {
	for i := 0; len(left) > 0; i++ {
		if i == groupGoneChecks {
			h.e.cfg.Logger.Warn("processes of the attempt outlived SIGKILL", "run", h.req.RunID, "attempt", h.req.Attempt, "pgid", h.ident.PGID, "count", len(left))
			return
		}
		// Not a timing decision: only lets the kernel finish the teardown.
		time.Sleep(time.Millisecond)
		left = h.signalAttempt(syscall.SIGKILL)
	}
}

// nothingLeft reports, without a /proc scan, that no process of the
// attempt can be alive: this process has no child but attempt leaders
// (this attempt's, dead and unreaped, among them). Once the leader is dead,
// every live process of the attempt — in its group or not — descends from
// a child of ours that is not a leader: its parent chain either reaches
// us through processes of the attempt, or was cut by a death and
// re-parented to us (we are its subreaper). No such child, nothing to find.
// Without /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN, often
// off on routers) the answer is "scan".
func (h *Handle) nothingLeft() bool {
	if !reaper.active {
		return false
	}
	children, ok := listOwnChildren()
	if !ok {
		return false
	}
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	for _, pid := range children {
		if _, leader := reaper.leaders[pid]; !leader {
			return false
		}
	}
	return true
}

// groupGoneChecks bounds awaitAttemptGone (about a second).
const groupGoneChecks = 1000

// waitNoReap blocks until pid has exited without reaping it (waitid with
// WNOWAIT), so the pid and the process group id stay reserved until
// Process.Wait.
func waitNoReap(pid int) error {
	const pPID = 1         // P_PID
	var siginfo [16]uint64 // siginfo_t is 128 bytes
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
