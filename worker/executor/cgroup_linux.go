//go:build linux

package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Per-attempt cgroups (ADR 0041). The host is examined once per process:
//   - cgroup v2, when this process's group (or a "ql3" child of it) is
//     writable: each attempt gets its own group, the child is cloned
//     straight into it (clone3 CLONE_INTO_CGROUP), and ending the attempt
//     writes cgroup.kill. memory and pids limits apply when those
//     controllers can be enabled for the attempt groups.
//   - cgroup v1 pids, memory and freezer hierarchies, where the host has
//     them (alone, or beside a v2 mount without those controllers: the
//     hybrid layout): each attempt gets a group in each, with pids.max and
//     the memory limit; the child is forked from a thread that sits in
//     those groups, so it is born inside them; ending the attempt freezes
//     the group, SIGKILLs every member and thaws it.
//   - neither: process groups, markers and the subreaper (ADR 0017).

// cgroupParentName is the directory, below this process's own group in each
// hierarchy, that holds the attempt groups.
const cgroupParentName = "ql3"

// v1Wanted are the v1 controllers an attempt group is made in.
var v1Wanted = []string{"pids", "memory", "freezer"}

// cgroupHost is what the host offers, found once.
type cgroupHost struct {
	v2Parent string          // dir of the attempt groups in the v2 hierarchy; "" none
	v2Kill   bool            // cgroup.kill exists
	v2Ctl    map[string]bool // controllers enabled for the attempt groups (memory, pids)
	v1Parent map[string]string
	v1Self   map[string]string // this process's own group per v1 controller (to move the spawning thread back)
	clone    atomic.Bool       // CLONE_INTO_CGROUP works (cleared at the first ENOSYS/EINVAL)
	memTotal int64             // physical memory, for the default limit
	desc     string
	notes    []string // why a level is missing, for the start log
	seq      atomic.Uint64
	ownerPID int
	ownStart uint64
}

var (
	hostOnce sync.Once
	host     *cgroupHost
)

// cgroups returns the host's containment (nil: none).
func cgroups() *cgroupHost {
	hostOnce.Do(func() {
		h := detectCgroups("/proc/self/mountinfo", "/proc/self/cgroup")
		if h.v2Parent != "" || len(h.v1Parent) > 0 {
			h.cleanLeftovers()
			host = h
		}
		hostDesc, hostNotes = h.describe(), h.notes
	})
	return host
}

// hostDesc is the containment line for logs and /readyz; hostNotes say
// why a hierarchy or a limit is not used (the start log).
var (
	hostDesc  string
	hostNotes []string
)

// ContainmentNotes says why a cgroup hierarchy or limit is not used here
// ("" when nothing is missing).
func ContainmentNotes() string {
	cgroups()
	return strings.Join(hostNotes, "; ")
}

func detectCgroups(mountinfoPath, selfPath string) *cgroupHost {
	h := &cgroupHost{v2Ctl: map[string]bool{}, v1Parent: map[string]string{}, v1Self: map[string]string{}, ownerPID: os.Getpid()}
	if st, err := readProcStat(h.ownerPID); err == nil {
		h.ownStart = st.StartTicks
	}
	h.memTotal = memTotal()
	mi, err1 := os.ReadFile(mountinfoPath)
	self, err2 := os.ReadFile(selfPath)
	if err1 != nil || err2 != nil {
		h.notes = append(h.notes, "cannot read the process's mounts or cgroups")
		return h
	}
	v2Path, v1Paths := parseProcCgroup(string(self))
	for _, m := range parseCgroupMounts(string(mi)) {
		switch {
		case m.V2 && h.v2Parent == "" && v2Path != "":
			if dir, ok := cgroupDir(m, v2Path); ok {
				h.setupV2(dir, v2Path == "/")
			}
		case !m.V2:
			for _, c := range m.Controllers {
				if !wanted(c) || h.v1Parent[c] != "" {
					continue
				}
				if p, ok := v1Paths[c]; ok {
					if dir, ok := cgroupDir(m, p); ok {
						h.setupV1(c, dir)
					}
				}
			}
		}
	}
	h.clone.Store(h.v2Parent != "")
	return h
}

func wanted(c string) bool {
	for _, w := range v1Wanted {
		if w == c {
			return true
		}
	}
	return false
}

// setupV2 prepares <self>/ql3 for attempt groups. memory and pids are
// enabled for them when this process's group offers them: at the root
// directly; elsewhere (a delegated service group) after moving this
// process into a leaf <self>/supervisor, since a v2 group that enables
// controllers for its children may hold no process itself.
func (h *cgroupHost) setupV2(self string, root bool) {
	parent := filepath.Join(self, cgroupParentName)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		h.notes = append(h.notes, "cgroup v2 is not writable here: "+err.Error())
		return
	}
	h.v2Parent = parent
	_, err := os.Stat(filepath.Join(parent, "cgroup.kill"))
	h.v2Kill = err == nil
	avail := readFields(filepath.Join(self, "cgroup.controllers"))
	var want []string
	for _, c := range []string{"memory", "pids"} {
		if avail[c] {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return
	}
	if !root && !readFields(filepath.Join(self, "cgroup.subtree_control"))["memory"] {
		leaf := filepath.Join(self, "supervisor")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			h.notes = append(h.notes, "cgroup v2 limits off: "+err.Error())
			return
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			h.notes = append(h.notes, "cgroup v2 limits off: cannot move into a leaf group: "+err.Error())
			return
		}
	}
	ctl := strings.Join(want, " ")
	if err := writeFile(filepath.Join(self, "cgroup.subtree_control"), ctl); err != nil {
		h.notes = append(h.notes, "cgroup v2 limits off: "+err.Error())
		return
	}
	if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), ctl); err != nil {
		h.notes = append(h.notes, "cgroup v2 limits off: "+err.Error())
		return
	}
	for _, c := range want {
		h.v2Ctl[c[1:]] = true
	}
}

// setupV1 prepares <self>/ql3 in one v1 hierarchy.
func (h *cgroupHost) setupV1(c, self string) {
	parent := filepath.Join(self, cgroupParentName)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		h.notes = append(h.notes, "cgroup v1 "+c+" is not writable here: "+err.Error())
		return
	}
	if _, err := os.Stat(filepath.Join(self, "tasks")); err != nil {
		h.notes = append(h.notes, "cgroup v1 "+c+": no tasks file")
		return
	}
	h.v1Parent[c], h.v1Self[c] = parent, self
}

// limits reports which limits the host enforces.
func (h *cgroupHost) limitsOn() (pids, memory bool) {
	return h.v2Ctl["pids"] || h.v1Parent["pids"] != "", h.v2Ctl["memory"] || h.v1Parent["memory"] != ""
}

func (h *cgroupHost) describe() string {
	var parts []string
	if h.v2Parent != "" {
		var what []string
		if h.v2Kill {
			what = append(what, "kill")
		}
		for _, c := range []string{"memory", "pids"} {
			if h.v2Ctl[c] {
				what = append(what, c)
			}
		}
		parts = append(parts, "cgroup v2 ("+strings.Join(what, ", ")+")")
	}
	if len(h.v1Parent) > 0 {
		var what []string
		for _, c := range v1Wanted {
			if h.v1Parent[c] != "" {
				what = append(what, c)
			}
		}
		parts = append(parts, "cgroup v1 ("+strings.Join(what, ", ")+")")
	}
	if len(parts) == 0 {
		return "none: process groups, markers and the subreaper only (no writable cgroup)"
	}
	s := "per-attempt " + strings.Join(parts, " + ")
	if p, m := h.limitsOn(); !p || !m {
		s += "; limits not enforced:"
		if !p {
			s += " processes"
		}
		if !m {
			s += " memory"
		}
	}
	return s
}

// Containment describes how attempts are contained on this host (logged
// at start, reported by /readyz).
func Containment() string {
	cgroups()
	return hostDesc
}

// cleanLeftovers kills and removes the attempt groups that a supervisor
// which is no longer alive left behind (a crash): their owner's pid is
// gone or now names another process.
func (h *cgroupHost) cleanLeftovers() {
	for _, parent := range h.parents() {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			pid, start, ok := parseAttemptGroupName(e.Name())
			if !ok || !e.IsDir() {
				continue
			}
			if st, err := readProcStat(pid); err == nil && st.StartTicks == start {
				continue // its supervisor is alive (another ql3 process on this host)
			}
			g := &attemptGroup{h: h, name: e.Name(), v1: map[string]string{}}
			if parent == h.v2Parent {
				g.v2 = filepath.Join(parent, e.Name())
			} else {
				for c, p := range h.v1Parent {
					if p == parent {
						g.v1[c] = filepath.Join(parent, e.Name())
					}
				}
			}
			g.killAll()
			g.remove()
		}
		_ = syscall.Rmdir(parent) // empty unless a live supervisor has groups in it
	}
}

func (h *cgroupHost) parents() []string {
	var out []string
	if h.v2Parent != "" {
		out = append(out, h.v2Parent)
	}
	for _, c := range v1Wanted {
		if p := h.v1Parent[c]; p != "" {
			out = append(out, p)
		}
	}
	return out
}

// memTotal is MemTotal from /proc/meminfo in bytes (0 unknown).
func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

func readFields(path string) map[string]bool {
	out := map[string]bool{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, f := range strings.Fields(string(data)) {
		out[f] = true
	}
	return out
}

// writeFile writes a cgroup control file (which must exist).
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}
