//go:build linux

package executor

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The escape fix (ADR 0017). A process that leaves the attempt's group
// (setsid, setpgid) is missed by a group kill, and one whose parent exits
// (double fork) is re-parented to init, out of our sight. So:
//
//   - the process becomes a child subreaper (PR_SET_CHILD_SUBREAPER): every
//     orphaned descendant is re-parented to us instead of init, so all of an
//     attempt's processes stay descendants of this process for as long as
//     they live;
//   - ending an attempt kills its group and every descendant of this
//     process that carries the attempt's QL3_RUN_ID/QL3_ATTEMPT marker
//     ("ours" = marker + descendant; each is named by pid + start time, not
//     a bare pid), and repeats until none is left;
//   - adopted orphans become our zombies when they die, and must be reaped
//     here, one pid at a time, never with wait(-1): os/exec waits for its
//     own children by pid (pidfd), and a wait(-1) would steal their exit
//     status. A zombie child is reaped only when it is provably not one
//     os/exec (or anyone in this process) will wait for — see reapAdopted.
//
// PR_SET_CHILD_SUBREAPER is a property of the whole process, so this state
// is package-wide, shared by every Executor in it.

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER (not in syscall for every GOARCH)

var reaper struct {
	once   sync.Once
	active bool  // the process is a child subreaper
	err    error // why it is not

	mu sync.Mutex // guards the fields below and serialises reap passes
	// leaders are the attempt leaders spawned by any Executor and not yet
	// reaped by their os/exec Wait: never ours to reap.
	leaders map[int]struct{}
	// adopted are an attempt's processes (other than its leader) seen alive
	// as descendants of ours, keyed by pid → start ticks: when one shows up
	// as a zombie child of ours (re-parented to us before or after it
	// died), it is ours to reap.
	adopted map[int]uint64
	// pidfdChecked/pidfdTracked: whether os.StartProcess keeps a pidfd for
	// each child (Go ≥ 1.23 on Linux ≥ 5.4 without seccomp limits), seen on
	// the first spawn. Only then can an unknown zombie child be told apart
	// from one os/exec still waits for.
	pidfdChecked, pidfdTracked bool
}

// becomeSubreaper makes the process a child subreaper once. A failure
// (Linux < 3.4, a seccomp filter) leaves the marker search working over
// all processes instead of our descendants; New logs it.
func becomeSubreaper() error {
	reaper.once.Do(func() {
		reaper.leaders = make(map[int]struct{})
		reaper.adopted = make(map[int]uint64)
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); e != 0 {
			reaper.err = e
			return
		}
		reaper.active = true
	})
	return reaper.err
}

// addLeader records a freshly spawned leader; on the first spawn it also
// checks whether os/exec tracks its children with pidfds.
func addLeader(pid int) {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	reaper.leaders[pid] = struct{}{}
	if !reaper.pidfdChecked {
		reaper.pidfdChecked = true
		_, reaper.pidfdTracked = pidfdHeldPids()[pid]
	}
}

// removeLeader is called once os/exec has reaped the leader.
func removeLeader(pid int) {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	delete(reaper.leaders, pid)
}

// procEntry is one process of a /proc snapshot.
type procEntry struct {
	pid int
	st  procStat
}

func (p procEntry) dead() bool { return p.st.State == 'Z' || p.st.State == 'X' || p.st.State == 'x' }

// snapshot reads the stat of every process in /proc. Processes that exit
// while it runs are skipped. It is not atomic: a process re-parented while
// it is read may name a parent that is already gone, which would hide it
// (and its subtree) from descendants. So a snapshot with such a dangling
// parent link is taken again, a bounded number of times.
func snapshot() ([]procEntry, error) {
	var out []procEntry
	for try := 0; try < snapshotTries; try++ {
		entries, err := os.ReadDir(procRoot)
		if err != nil {
			return nil, err
		}
		out = make([]procEntry, 0, len(entries))
		present := make(map[int]bool, len(entries))
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid <= 0 {
				continue
			}
			if st, err := readProcStat(pid); err == nil {
				out = append(out, procEntry{pid: pid, st: st})
				present[pid] = true
			}
		}
		consistent := true
		for _, p := range out {
			// ppid 0: the init of this pid namespace or a kernel thread.
			if p.st.PPID != 0 && !present[p.st.PPID] {
				consistent = false
				break
			}
		}
		if consistent {
			break
		}
	}
	return out, nil
}

// snapshotTries bounds the retries of an inconsistent snapshot (each is one
// pass over /proc; re-parenting settles within microseconds).
const snapshotTries = 10

// descendants returns the processes below root in the snapshot's parent
// links (root excluded).
func descendants(procs []procEntry, root int) []procEntry {
	children := make(map[int][]int, len(procs))
	byPID := make(map[int]procEntry, len(procs))
	for _, p := range procs {
		children[p.st.PPID] = append(children[p.st.PPID], p.pid)
		byPID[p.pid] = p
	}
	var out []procEntry
	queue := append([]int(nil), children[root]...)
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, byPID[pid])
		queue = append(queue, children[pid]...)
	}
	return out
}

// attemptProcesses lists the live processes of a running attempt: members
// of its group and marked descendants of this process (all marked
// processes when the process could not become a subreaper: escaped ones
// are then children of init). Each is remembered (pid + start time) so that
// when it turns up as a zombie child of ours, it is reaped.
func attemptProcesses(runID string, attempt, pgid int) ([]Identity, error) {
	procs, err := snapshot()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	candidates := procs
	if reaper.active {
		candidates = descendants(procs, self)
	}
	boot := BootID()
	var out []Identity
	for _, p := range candidates {
		if p.pid == self || p.dead() {
			continue
		}
		if p.st.PGID != pgid && !descendantHasMarker(p.pid, runID, attempt) {
			continue
		}
		out = append(out, Identity{PID: p.pid, PGID: p.st.PGID, StartTicks: p.st.StartTicks, BootID: boot})
	}
	if reaper.active && len(out) > 0 {
		reaper.mu.Lock()
		for _, p := range out {
			if _, leader := reaper.leaders[p.PID]; !leader {
				reaper.adopted[p.PID] = p.StartTicks
			}
		}
		reaper.mu.Unlock()
	}
	return out, nil
}

// descendantHasMarker is hasMarker for a descendant of ours, which is
// never a kernel thread: an empty environment is read again, briefly,
// because a process in the middle of execve shows an empty one until the
// new image's is set up, and a scan must not take it for unmarked.
func descendantHasMarker(pid int, runID string, attempt int) bool {
	for try := 0; ; try++ {
		data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			return false
		}
		if len(data) > 0 || try == environRetries {
			return environHasMarker(data, runID, attempt)
		}
		// Not a timing decision: lets a concurrent execve finish.
		time.Sleep(100 * time.Microsecond)
	}
}

// environRetries bounds descendantHasMarker's re-reads (a process started
// with an empty environment costs about a millisecond per scan).
const environRetries = 10

// reapAdopted reaps the zombie children of this process that are ours to
// reap, each by its pid (wait4(pid, WNOHANG), never wait(-1)):
//
//   - adopted descendants of an attempt that were seen alive (marked, with
//     a matching start time): os/exec never started them, nobody else in
//     this process waits for them;
//   - when os/exec tracks its children with pidfds (checked on the first
//     spawn), any other zombie child that no pidfd of this process refers
//     to: os/exec holds a pidfd for each child from clone() until its Wait
//     has reaped it, so a zombie without one is an orphan re-parented to us
//     (also one whose marker was never seen: it died before any scan).
//
// Attempt leaders are never reaped here: their os/exec Wait does it. It
// returns how many it reaped.
func reapAdopted() int {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if !reaper.active {
		return 0
	}
	if !anyChildWaitable() {
		pruneAdopted()
		return 0
	}
	zombies, ok := zombieChildren()
	if !ok {
		return 0
	}
	if len(zombies) == 0 {
		// The waitable children are attempt leaders, whose os/exec Wait
		// reaps them (the common case while short attempts end).
		pruneAdopted()
		return 0
	}
	var held map[int]struct{}
	if reaper.pidfdTracked && len(zombies) > 0 {
		held = pidfdHeldPids()
	}
	reaped := 0
	reapedNow := make(map[int]bool)
	for _, z := range zombies {
		if _, leader := reaper.leaders[z.pid]; leader {
			continue
		}
		ticks, known := reaper.adopted[z.pid]
		known = known && ticks == z.st.StartTicks
		_, waitedFor := held[z.pid]
		if !known && (!reaper.pidfdTracked || waitedFor) {
			continue
		}
		var ws syscall.WaitStatus
		for {
			pid, err := syscall.Wait4(z.pid, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if pid == z.pid {
				reaped++
				reapedNow[pid] = true
			}
			break
		}
	}
	// Forget adopted processes that are gone (reaped here, or their pid
	// now names another process); keep those alive or not yet ours.
	for pid := range reapedNow {
		delete(reaper.adopted, pid)
	}
	pruneAdopted()
	return reaped
}

// zombieChildren lists the zombie children of this process that are not
// attempt leaders: the only ones reapAdopted may reap. With children files
// it reads them and the stat of each non-leader child — a few reads, where
// a /proc snapshot reads every process on the machine, and a reap pass
// runs on every SIGCHLD. Without them (CONFIG_PROC_CHILDREN off) it takes
// the snapshot. ok is false when /proc could not be read. A child that
// turns zombie after the listing is left to the next pass (its SIGCHLD
// brings one). Caller holds reaper.mu.
func zombieChildren() (zombies []procEntry, ok bool) {
	self := os.Getpid()
	if children, ok := listOwnChildren(); ok {
		for _, pid := range children {
			if _, leader := reaper.leaders[pid]; leader {
				continue
			}
			st, err := readProcStat(pid)
			if err == nil && st.PPID == self && st.State == 'Z' {
				zombies = append(zombies, procEntry{pid: pid, st: st})
			}
		}
		return zombies, true
	}
	procs, err := snapshot()
	if err != nil {
		return nil, false
	}
	for _, p := range procs {
		if _, leader := reaper.leaders[p.pid]; !leader && p.st.PPID == self && p.st.State == 'Z' {
			zombies = append(zombies, p)
		}
	}
	return zombies, true
}

// listOwnChildren is ownChildren; tests replace it to take the path of a
// kernel without children files.
var listOwnChildren = ownChildren

// ownChildren lists this process's children from the children files of
// its threads (an orphan is re-parented to one of the subreaper's threads).
// ok is false when the kernel has no such files.
func ownChildren() ([]int, bool) {
	tasks, err := os.ReadDir(procRoot + "/self/task")
	if err != nil {
		return nil, false
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(procRoot + "/self/task/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, terr := os.Stat(procRoot + "/self/task/" + t.Name()); terr != nil {
				continue // the thread exited meanwhile
			}
			return nil, false // no CONFIG_PROC_CHILDREN
		}
		if err != nil {
			return nil, false
		}
		for _, f := range bytes.Fields(data) {
			pid, err := strconv.Atoi(string(f))
			if err != nil {
				return nil, false
			}
			out = append(out, pid)
		}
	}
	return out, len(tasks) > 0
}

// pruneAdopted forgets adopted processes that are gone or whose pid names
// another process now (one stat read each; the set is what the attempts'
// scans found, small). Caller holds reaper.mu.
func pruneAdopted() {
	for pid, t := range reaper.adopted {
		if st, err := readProcStat(pid); err != nil || st.StartTicks != t {
			delete(reaper.adopted, pid)
		}
	}
}

// anyChildWaitable peeks, without reaping anything (WNOWAIT), whether
// some child of this process has exited: the common case of a reap pass
// with nothing to do then costs one system call instead of a /proc scan.
func anyChildWaitable() bool {
	const pAll = 0         // P_ALL
	var siginfo [32]uint32 // siginfo_t is 128 bytes; si_signo is the first int
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		// ECHILD: no children at all. Otherwise Linux leaves si_signo 0
		// when no child is waitable and sets it to SIGCHLD when one is.
		return e == 0 && siginfo[0] != 0
	}
}

// pidfdHeldPids returns the pids that pidfds open in this process refer
// to (/proc/self/fdinfo "Pid:" of each anon_inode:[pidfd]).
func pidfdHeldPids() map[int]struct{} {
	held := make(map[int]struct{})
	entries, err := os.ReadDir(procRoot + "/self/fd")
	if err != nil {
		return held
	}
	for _, e := range entries {
		target, err := os.Readlink(procRoot + "/self/fd/" + e.Name())
		if err != nil || target != "anon_inode:[pidfd]" {
			continue
		}
		info, err := os.ReadFile(procRoot + "/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		if pid, ok := fdinfoPid(info); ok {
			held[pid] = struct{}{}
		}
	}
	return held
}

// fdinfoPid parses the "Pid:" line of a pidfd's fdinfo.
func fdinfoPid(info []byte) (int, bool) {
	for len(info) > 0 {
		line := info
		if i := bytes.IndexByte(info, '\n'); i >= 0 {
			line, info = info[:i], info[i+1:]
		} else {
			info = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			return pid, err == nil && pid > 0
		}
	}
	return 0, false
}
