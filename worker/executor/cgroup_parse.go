package executor

import (
	"strconv"
	"strings"
)

// Pure parsers for the cgroup files the containment reads (ADR 0041);
// cgroup_linux.go does the I/O.

// cgroupMount is one cgroup file system mount from /proc/self/mountinfo.
type cgroupMount struct {
	Dir         string   // mount point
	Root        string   // the hierarchy path mounted there ("/" usually)
	V2          bool     // cgroup2
	Controllers []string // v1: the controllers of the hierarchy (from the super options)
}

// v1Controllers are the cgroup v1 controller names (the other super
// options of a v1 mount, like xattr or name=systemd, are not controllers).
var v1Controllers = map[string]bool{"blkio": true, "cpu": true, "cpuacct": true, "cpuset": true, "devices": true,
	"freezer": true, "hugetlb": true, "memory": true, "misc": true, "net_cls": true, "net_prio": true,
	"perf_event": true, "pids": true, "rdma": true}

// parseCgroupMounts reads the cgroup and cgroup2 mounts of a mountinfo
// file. Mount points with escapes (\040 for a space) are decoded.
func parseCgroupMounts(mountinfo string) []cgroupMount {
	var out []cgroupMount
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{Root: unescapeMount(f[3]), Dir: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			m.V2 = true
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if v1Controllers[opt] {
					m.Controllers = append(m.Controllers, opt)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount decodes mountinfo's octal escapes (\040, \011, \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup reads /proc/<pid>/cgroup: the v2 path ("" when the
// process has no v2 line) and the v1 path of each controller.
func parseProcCgroup(data string) (v2 string, v1 map[string]string) {
	v1 = make(map[string]string)
	for _, line := range strings.Split(data, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				v1[c] = parts[2]
			}
		}
	}
	return v2, v1
}

// cgroupDir joins a mount and a process's path in the hierarchy; ok is
// false when the path is not under the mounted root (a cgroup outside
// what this mount namespace shows).
func cgroupDir(m cgroupMount, path string) (string, bool) {
	root := strings.TrimSuffix(m.Root, "/")
	if root != "" {
		if path != root && !strings.HasPrefix(path, root+"/") {
			return "", false
		}
		path = strings.TrimPrefix(path, root)
	}
	return strings.TrimSuffix(m.Dir+path, "/"), true
}

// parseKeyedCount reads "key N" from a flat keyed file (memory.events,
// memory.oom_control); ok is false when the key is missing.
func parseKeyedCount(data, key string) (int64, bool) {
	for _, line := range strings.Split(data, "\n") {
		k, v, found := strings.Cut(line, " ")
		if found && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// attemptGroupName names an attempt's cgroup after its owner (pid and
// start time of the supervising process) and a sequence number, so a later
// process can tell the groups a dead supervisor left from a live one's.
func attemptGroupName(ownerPID int, ownerStart uint64, seq uint64) string {
	return "o" + strconv.Itoa(ownerPID) + "-" + strconv.FormatUint(ownerStart, 10) + "-" + strconv.FormatUint(seq, 10)
}

// parseAttemptGroupName is attemptGroupName's inverse.
func parseAttemptGroupName(name string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, "o")
	if !found {
		return 0, 0, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(f[0])
	s, err2 := strconv.ParseUint(f[1], 10, 64)
	_, err3 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || p <= 0 {
		return 0, 0, false
	}
	return p, s, true
}
