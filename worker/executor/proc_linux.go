//go:build linux

package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const procRoot = "/proc"

var (
	bootIDOnce sync.Once
	bootIDVal  string
)

// BootID is the kernel's boot id ("" when unreadable).
func BootID() string {
	bootIDOnce.Do(func() {
		data, err := os.ReadFile(procRoot + "/sys/kernel/random/boot_id")
		if err == nil {
			bootIDVal = strings.TrimSpace(string(data))
		}
	})
	return bootIDVal
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(data)
}

// ReadIdentity reads the identity of a live process.
func ReadIdentity(pid int) (Identity, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return Identity{}, err
	}
	return Identity{PID: pid, PGID: st.PGID, StartTicks: st.StartTicks, BootID: BootID()}, nil
}

// Alive reports whether the process named by id still runs: the pid exists,
// is not a zombie, and — when known — its start time and the boot id match.
// A process that exited but was not reaped yet counts as gone.
func (id Identity) Alive() bool {
	if id.PID <= 0 {
		return false
	}
	if id.BootID != "" && BootID() != "" && id.BootID != BootID() {
		return false // recorded during an earlier boot: that process is gone
	}
	st, err := readProcStat(id.PID)
	if err != nil {
		return false
	}
	if st.State == 'Z' || st.State == 'X' || st.State == 'x' {
		return false
	}
	return id.StartTicks == 0 || st.StartTicks == id.StartTicks
}

func hasMarker(pid int, runID string, attempt int) bool {
	data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	return environHasMarker(data, runID, attempt)
}

// FindProcesses lists the live processes that belong to an attempt: those
// whose environment carries its QL3_RUN_ID/QL3_ATTEMPT marker and, when the
// leader is alive and provably the attempt's (matching start time, or the
// marker), every member of its process group. Each is returned with its own
// start time so later signals cannot hit a reused pid. Processes of other
// users are not visible and not listed.
func FindProcesses(runID string, attempt int, leader Identity) ([]Identity, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("executor: list %s: %w", procRoot, err)
	}
	self := os.Getpid()
	leaderOurs := leader.PID > 0 && leader.Alive() && (leader.StartTicks != 0 || hasMarker(leader.PID, runID, attempt))
	boot := BootID()
	var out []Identity
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.State == 'Z' || st.State == 'X' || st.State == 'x' {
			continue
		}
		if (leaderOurs && st.PGID == leader.PGID) || hasMarker(pid, runID, attempt) {
			out = append(out, Identity{PID: pid, PGID: st.PGID, StartTicks: st.StartTicks, BootID: boot})
		}
	}
	return out, nil
}

// OrphanReport says what TerminateOrphans found and did.
type OrphanReport struct {
	Found     int // processes of the attempt found alive
	Remaining int // still alive after SIGTERM, grace and SIGKILL (0 on success)
}

// orphanPoll is how often TerminateOrphans looks whether processes are gone.
const orphanPoll = 50 * time.Millisecond

// orphanKillChecks bounds the wait after SIGKILL to about five seconds (a
// process in uninterruptible sleep may take a while to die).
const orphanKillChecks = 5000

// TerminateOrphans ends what is left of an attempt whose supervisor died
// with an earlier ql3-edge or ql3-worker process (crash recovery): SIGTERM to each of its
// processes, SIGKILL after the kill grace, then waits until they are gone.
// Such processes cannot be re-attached: their output pipe and exit status
// belonged to the dead supervisor. An error with Remaining > 0 means the
// attempt could not be proven gone; the caller must not run it again.
func (e *Executor) TerminateOrphans(ctx context.Context, runID string, attempt int, leader Identity) (OrphanReport, error) {
	procs, err := FindProcesses(runID, attempt, leader)
	if err != nil {
		return OrphanReport{}, err
	}
	rep := OrphanReport{Found: len(procs)}
	if len(procs) == 0 {
		return rep, nil
	}
	e.cfg.Logger.Info("terminating processes of an interrupted attempt", "run", runID, "attempt", attempt, "count", len(procs))
	procs = e.signalAndWait(ctx, procs, syscall.SIGTERM, e.cfg.KillGrace)
	if len(procs) > 0 {
		procs = killAndSettle(procs)
	}
	rep.Remaining = len(procs)
	if rep.Remaining > 0 {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		return rep, fmt.Errorf("executor: %d process(es) of run %s attempt %d survived SIGKILL", rep.Remaining, runID, attempt)
	}
	return rep, nil
}

// signalAndWait signals procs and polls until they are gone or wait
// elapsed; it returns those still alive. Liveness is re-checked by identity
// right before each signal so a pid reused in between is left alone.
func (e *Executor) signalAndWait(ctx context.Context, procs []Identity, sig syscall.Signal, wait time.Duration) []Identity {
	for _, p := range procs {
		if p.Alive() {
			if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				e.cfg.Logger.Warn("signal orphan", "pid", p.PID, "signal", sig.String(), "err", err)
			}
		}
	}
	deadline := e.cfg.Clock.Now().Add(wait)
	for {
		alive := procs[:0]
		for _, p := range procs {
			if p.Alive() {
				alive = append(alive, p)
			}
		}
		procs = alive
		if len(procs) == 0 || !e.cfg.Clock.Now().Before(deadline) {
			return procs
		}
		t := e.cfg.Clock.NewTimer(orphanPoll)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return procs
		}
	}
}

// killAndSettle SIGKILLs procs and waits until the kernel has torn them
// down. This is not a policy timeout (the grace before it is, on the
// injected clock) but an OS settle: a bounded number of 1 ms pauses.
func killAndSettle(procs []Identity) []Identity {
	for _, p := range procs {
		if p.Alive() {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	for i := 0; i < orphanKillChecks; i++ {
		alive := procs[:0]
		for _, p := range procs {
			if p.Alive() {
				alive = append(alive, p)
			}
		}
		procs = alive
		if len(procs) == 0 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return procs
}
