//go:build linux

package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Default limits of an attempt group (a spec's limits override them).
const (
	DefaultMaxProcesses = 1024
	// memory: half of the machine's memory, so one runaway task cannot
	// take the box down.
	defaultMemoryShare = 2
	// groupEmptyChecks bounds the wait for a killed group to empty (~1 s).
	groupEmptyChecks = 1000
)

// attemptGroup is one attempt's cgroup in each hierarchy in use.
type attemptGroup struct {
	h      *cgroupHost
	name   string
	v2     string // dir, "" when v2 is not used
	v2fd   int    // open dir for CLONE_INTO_CGROUP; -1 none
	v1     map[string]string
	memory int64
	pids   int
}

// newGroup creates the attempt's groups with its limits. skipV2 leaves
// the v2 hierarchy out (tests of the v1-only path on a hybrid host).
func (h *cgroupHost) newGroup(pids int, memory int64, skipV2 bool) (*attemptGroup, error) {
	if pids <= 0 {
		pids = DefaultMaxProcesses
	}
	if memory <= 0 && h.memTotal > 0 {
		memory = h.memTotal / defaultMemoryShare
	}
	g := &attemptGroup{h: h, name: attemptGroupName(h.ownerPID, h.ownStart, h.seq.Add(1)), v2fd: -1,
		v1: map[string]string{}, memory: memory, pids: pids}
	if err := g.create(skipV2); err != nil {
		g.remove()
		return nil, fmt.Errorf("attempt cgroup: %w", err)
	}
	return g, nil
}

func (g *attemptGroup) create(skipV2 bool) error {
	h := g.h
	if h.v2Parent != "" && !skipV2 {
		dir := filepath.Join(h.v2Parent, g.name)
		if err := h.mkGroup(dir, true); err != nil {
			return err
		}
		g.v2 = dir
		if h.v2Ctl["pids"] {
			if err := writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(g.pids)); err != nil {
				return err
			}
		}
		if h.v2Ctl["memory"] && g.memory > 0 {
			if err := writeFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(g.memory, 10)); err != nil {
				return err
			}
			// The limit is firm (no swapping past it) and an OOM kill takes
			// the whole attempt, not one arbitrary process of it.
			_ = writeFile(filepath.Join(dir, "memory.swap.max"), "0")
			_ = writeFile(filepath.Join(dir, "memory.oom.group"), "1")
		}
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		g.v2fd = fd
	}
	for _, c := range v1Wanted {
		parent := h.v1Parent[c]
		if parent == "" {
			continue
		}
		dir := filepath.Join(parent, g.name)
		if err := h.mkGroup(dir, false); err != nil {
			return err
		}
		g.v1[c] = dir
		switch c {
		case "pids":
			if err := writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(g.pids)); err != nil {
				return err
			}
		case "memory":
			if g.memory > 0 {
				if err := writeFile(filepath.Join(dir, "memory.limit_in_bytes"), strconv.FormatInt(g.memory, 10)); err != nil {
					return err
				}
				// memory+swap at the same value: the limit is firm.
				_ = writeFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), strconv.FormatInt(g.memory, 10))
			}
		}
	}
	return nil
}

// start starts cmd inside the group, race-free: on v2 the kernel clones
// the child straight into the group (CLONE_INTO_CGROUP); on v1 the child
// is forked from an OS thread that was moved into the attempt's v1 groups
// first (cgroup v1 membership is per thread and a child inherits its
// parent thread's), and the thread is moved back afterwards. Either way no
// code of the attempt ever runs outside its groups, so even a fork bomb
// starts bounded. build makes a fresh Cmd (a failed Start cannot be
// retried on the same one).
func (g *attemptGroup) start(build func() *exec.Cmd) (*exec.Cmd, error) {
	clone := g.v2fd >= 0 && g.h.clone.Load()
	cmd := build()
	if clone {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.v2fd
	}
	err := g.inV1(cmd.Start)
	if err != nil && clone && (errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.E2BIG)) {
		// A kernel before 5.7 (no clone3 CLONE_INTO_CGROUP): place the
		// child right after the start instead, from now on.
		g.h.clone.Store(false)
		clone = false
		cmd = build()
		err = g.inV1(cmd.Start)
	}
	if err != nil {
		return nil, err
	}
	if g.v2 != "" && !clone {
		if err := writeFile(filepath.Join(g.v2, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
			return cmd, fmt.Errorf("attempt cgroup: placing the process: %w", err)
		}
	}
	return cmd, nil
}

// inV1 runs start on a locked OS thread that sits in the attempt's v1
// groups. If the thread cannot be moved back, it is not unlocked: the Go
// runtime then ends it with the goroutine, so it never runs other code
// inside the attempt's groups.
func (g *attemptGroup) inV1(start func() error) error {
	if len(g.v1) == 0 {
		return start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		tid := strconv.Itoa(syscall.Gettid())
		var moved []string
		var err error
		for _, c := range v1Wanted {
			if dir := g.v1[c]; dir != "" {
				if err = writeFile(filepath.Join(dir, "tasks"), tid); err != nil {
					break
				}
				moved = append(moved, c)
			}
		}
		if err == nil {
			err = start()
		}
		back := true
		for _, c := range moved {
			if werr := writeFile(filepath.Join(g.h.v1Self[c], "tasks"), tid); werr != nil {
				back = false
			}
		}
		if back {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// members lists the pids in the group (any hierarchy; v2 first).
func (g *attemptGroup) members() []int {
	seen := map[int]bool{}
	var out []int
	dirs := []string{g.v2}
	for _, c := range v1Wanted {
		dirs = append(dirs, g.v1[c])
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}

// signalMembers sends sig to every process in the group.
func (g *attemptGroup) signalMembers(sig syscall.Signal) {
	for _, pid := range g.members() {
		_ = syscall.Kill(pid, sig)
	}
}

// killAll ends every process of the group and waits, boundedly, until
// the group is empty: cgroup.kill on v2; otherwise freeze (v1 freezer or
// v2 cgroup.freeze), SIGKILL each member, thaw — a frozen process cannot
// fork, so none escapes; without a freezer, SIGKILL rounds until empty
// (pids.max bounds what a fork bomb can add per round). It reports whether
// the group emptied.
func (g *attemptGroup) killAll() bool {
	switch {
	case g.v2 != "" && g.h.v2Kill:
		_ = writeFile(filepath.Join(g.v2, "cgroup.kill"), "1")
	default:
		g.freezeKillThaw()
	}
	for i := 0; i < groupEmptyChecks; i++ {
		if len(g.members()) == 0 {
			return true
		}
		// Not a timing decision: only lets the kernel finish the teardown.
		time.Sleep(time.Millisecond)
		g.signalMembers(syscall.SIGKILL)
	}
	return len(g.members()) == 0
}

func (g *attemptGroup) freezeKillThaw() {
	state, frozen, thawed := "", "", ""
	switch {
	case g.v1["freezer"] != "":
		state, frozen, thawed = filepath.Join(g.v1["freezer"], "freezer.state"), "FROZEN", "THAWED"
	case g.v2 != "":
		state, frozen, thawed = filepath.Join(g.v2, "cgroup.freeze"), "1", "0"
	}
	if state == "" || writeFile(state, frozen) != nil {
		g.signalMembers(syscall.SIGKILL)
		return
	}
	if strings.HasSuffix(state, "freezer.state") {
		for i := 0; i < groupEmptyChecks; i++ {
			if data, err := os.ReadFile(state); err != nil || strings.TrimSpace(string(data)) == "FROZEN" {
				break
			}
			time.Sleep(time.Millisecond) // FREEZING: the kernel is still stopping members
		}
	}
	g.signalMembers(syscall.SIGKILL)
	_ = writeFile(state, thawed)
}

// oomKilled reports whether the kernel's OOM killer ended a process of
// the group because it went over its memory limit.
func (g *attemptGroup) oomKilled() bool {
	if g.v2 != "" && g.h.v2Ctl["memory"] {
		if data, err := os.ReadFile(filepath.Join(g.v2, "memory.events")); err == nil {
			if n, ok := parseKeyedCount(string(data), "oom_kill"); ok && n > 0 {
				return true
			}
		}
	}
	if dir := g.v1["memory"]; dir != "" {
		if data, err := os.ReadFile(filepath.Join(dir, "memory.oom_control")); err == nil {
			if n, ok := parseKeyedCount(string(data), "oom_kill"); ok && n > 0 {
				return true
			}
		}
	}
	return false
}

// mkGroup creates an attempt group, and its parent when another
// attempt's remove just took the (then empty) parent away: the parent is
// removed whenever it empties, so no directory of ours outlives the work
// in the host's cgroup tree.
func (h *cgroupHost) mkGroup(dir string, v2 bool) error {
	var err error
	for range 3 {
		if err = os.Mkdir(dir, 0o755); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		parent := filepath.Dir(dir)
		if perr := os.Mkdir(parent, 0o755); perr != nil && !errors.Is(perr, fs.ErrExist) {
			return perr
		}
		if v2 && len(h.v2Ctl) > 0 {
			var ctl []string
			for _, c := range []string{"memory", "pids"} {
				if h.v2Ctl[c] {
					ctl = append(ctl, "+"+c)
				}
			}
			if werr := writeFile(filepath.Join(parent, "cgroup.subtree_control"), strings.Join(ctl, " ")); werr != nil {
				return werr
			}
		}
	}
	return err
}

// remove closes the group's fd and removes its directories (after the
// attempt settled; a dying member can keep one busy for a moment), and
// the parent "ql3" directories when they are empty.
func (g *attemptGroup) remove() {
	if g.v2fd >= 0 {
		_ = syscall.Close(g.v2fd)
		g.v2fd = -1
	}
	dirs := []string{g.v2}
	for _, c := range v1Wanted {
		dirs = append(dirs, g.v1[c])
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		for i := 0; i < groupEmptyChecks; i++ {
			err := syscall.Rmdir(dir)
			if err == nil || errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		_ = syscall.Rmdir(filepath.Dir(dir)) // fails (ENOTEMPTY/EBUSY) while other attempts run
	}
}
