package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is this process's CPU time so far (the TLS clients and the
// ingress with its dispatcher share it).
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat CPU times
// (100 on every architecture Linux exposes to user space).
const clockTick = 10 * time.Millisecond

// procTimes reads the parent pid and the user, system, reaped children's
// user and system times of one process from /proc/<pid>/stat.
func procTimes(path string) (ppid int, self, children time.Duration, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("%s: no command field", path)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return 0, 0, 0, fmt.Errorf("%s: %d fields", path, len(f))
	}
	n := make([]int64, 5)
	for k, idx := range []int{1, 11, 12, 13, 14} { // ppid, utime, stime, cutime, cstime
		if n[k], err = strconv.ParseInt(f[idx], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("%s: field %d: %w", path, idx+3, err)
		}
	}
	return int(n[0]), time.Duration(n[1]+n[2]) * clockTick, time.Duration(n[3]+n[4]) * clockTick, nil
}

// serverCPU is the CPU time the PostgreSQL server has used so far: the
// postmaster's, its reaped backends' (exited connections), and every live
// child's. It needs the server on this host (the benchmark starts it).
func (b *bench) serverCPU() (time.Duration, error) {
	var backend int
	if err := b.su.QueryRow(b.ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	postmaster, _, _, err := procTimes(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return 0, err
	}
	_, self, reaped, err := procTimes(fmt.Sprintf("/proc/%d/stat", postmaster))
	if err != nil {
		return 0, err
	}
	total := self + reaped
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	for _, p := range paths {
		ppid, cpu, _, err := procTimes(p)
		if err != nil {
			continue // exited meanwhile
		}
		if ppid == postmaster {
			total += cpu
		}
	}
	return total, nil
}
