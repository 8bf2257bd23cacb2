//go:build unix

package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the data directory's lock: one `serve` per data dir.
const LockFileName = "ql3-edge.lock"

// dataDirLock is the held exclusive lock on a data directory. The kernel
// drops it when the process dies (flock on an open file description), so a
// crash never leaves a stale lock; the pid inside is only for the message.
type dataDirLock struct{ f *os.File }

// lockDataDir takes the data directory's exclusive lock without waiting.
// When another process holds it, the error names that process's pid: a
// second server must stop here, before it binds, recovers or signals any
// process the first one runs.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the data directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					holder = fmt.Sprintf("ql3-edge pid %d", pid)
				}
			}
			return nil, fmt.Errorf("data directory %s is in use by %s: stop it first, or give this server another --data-dir", dir, holder)
		}
		return nil, fmt.Errorf("locking the data directory: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("writing the data directory lock: %w", err)
		}
	} else {
		f.Close()
		return nil, fmt.Errorf("writing the data directory lock: %w", err)
	}
	return &dataDirLock{f: f}, nil
}

// release drops the lock (the file stays; its content is stale then, and
// the next holder rewrites it).
func (l *dataDirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
