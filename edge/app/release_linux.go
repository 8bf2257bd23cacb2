//go:build linux

package app

import (
	"bufio"
	"errors"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// releaseIdleMemory returns the freed Go heap to the kernel and drops this
// process's resident pages of its own executable's read-only mappings
// (code and read-only data). Those pages are clean copies of the file:
// MADV_DONTNEED on a private read-only file mapping only unmaps them, and
// the next access maps them again from the page cache. The writable data
// mapping is never touched (dropping it would lose its state).
func releaseIdleMemory() error {
	debug.FreeOSMemory()
	return dropExecutablePages()
}

func dropExecutablePages() error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	var errList []error
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "start-end perms offset dev inode   pathname"
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Join(fields[5:], " ") != exe {
			continue
		}
		if perms := fields[1]; perms != "r-xp" && perms != "r--p" {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED); e != 0 {
			errList = append(errList, e)
		}
	}
	if err := sc.Err(); err != nil {
		errList = append(errList, err)
	}
	return errors.Join(errList...)
}
