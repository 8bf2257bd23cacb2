package executor

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// Identity names a process beyond its pid: pids are reused, so liveness
// checks compare the start time (clock ticks after boot, field 22 of
// /proc/<pid>/stat) and the boot id as well.
type Identity struct {
	PID        int
	PGID       int
	StartTicks uint64 // 0 when unknown
	BootID     string // /proc/sys/kernel/random/boot_id; "" when unknown
}

// String encodes the identity as "pid:pgid:startTicks:bootID" for storage.
func (id Identity) String() string {
	return strconv.Itoa(id.PID) + ":" + strconv.Itoa(id.PGID) + ":" + strconv.FormatUint(id.StartTicks, 10) + ":" + id.BootID
}

// ParseIdentity decodes String's format.
func ParseIdentity(s string) (Identity, error) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) != 4 {
		return Identity{}, errors.New("identity: want pid:pgid:startTicks:bootID")
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return Identity{}, errors.New("identity: bad pid")
	}
	pgid, err := strconv.Atoi(parts[1])
	if err != nil || pgid <= 0 {
		return Identity{}, errors.New("identity: bad pgid")
	}
	ticks, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return Identity{}, errors.New("identity: bad start ticks")
	}
	if len(parts[3]) > 64 || strings.ContainsAny(parts[3], ":\n\x00") {
		return Identity{}, errors.New("identity: bad boot id")
	}
	return Identity{PID: pid, PGID: pgid, StartTicks: ticks, BootID: parts[3]}, nil
}

// procStat is the part of /proc/<pid>/stat the executor needs.
type procStat struct {
	State      byte
	PPID       int
	PGID       int
	StartTicks uint64
}

// parseProcStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself contain spaces and parentheses, so the fields
// after it are found from the last ')'.
func parseProcStat(data []byte) (procStat, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 || bytes.IndexByte(data, '(') < 0 || bytes.IndexByte(data, '(') > end {
		return procStat{}, errors.New("proc stat: no command field")
	}
	rest := strings.Fields(string(data[end+1:]))
	// rest[0] is field 3 (state); field n is rest[n-3].
	const startTimeField = 22
	if len(rest) < startTimeField-2 {
		return procStat{}, errors.New("proc stat: too few fields")
	}
	if len(rest[0]) != 1 || !(rest[0][0] >= 'A' && rest[0][0] <= 'Z' || rest[0][0] >= 'a' && rest[0][0] <= 'z') {
		return procStat{}, errors.New("proc stat: bad state")
	}
	ppid, err := strconv.Atoi(rest[4-3])
	if err != nil {
		return procStat{}, errors.New("proc stat: bad ppid")
	}
	pgid, err := strconv.Atoi(rest[5-3])
	if err != nil {
		return procStat{}, errors.New("proc stat: bad pgrp")
	}
	start, err := strconv.ParseUint(rest[startTimeField-3], 10, 64)
	if err != nil {
		return procStat{}, errors.New("proc stat: bad starttime")
	}
	return procStat{State: rest[0][0], PPID: ppid, PGID: pgid, StartTicks: start}, nil
}

// environHasMarker reports whether a NUL-separated environment block
// (/proc/<pid>/environ) carries the attempt's QL3_RUN_ID and QL3_ATTEMPT.
func environHasMarker(environ []byte, runID string, attempt int) bool {
	if runID == "" {
		return false
	}
	wantRun := "QL3_RUN_ID=" + runID
	wantAttempt := "QL3_ATTEMPT=" + strconv.Itoa(attempt)
	var haveRun, haveAttempt bool
	for len(environ) > 0 {
		var kv []byte
		if i := bytes.IndexByte(environ, 0); i >= 0 {
			kv, environ = environ[:i], environ[i+1:]
		} else {
			kv, environ = environ, nil
		}
		switch string(kv) {
		case wantRun:
			haveRun = true
		case wantAttempt:
			haveAttempt = true
		}
	}
	return haveRun && haveAttempt
}
