//go:build !unix

package app

import "errors"

// LockFileName is the data directory's lock: one `serve` per data dir.
const LockFileName = "ql3-edge.lock"

type dataDirLock struct{}

// lockDataDir: the edge serves on Unix systems only (its executor manages
// Unix process groups), so other systems are refused here plainly.
func lockDataDir(string) (*dataDirLock, error) {
	return nil, errors.New("ql3-edge serve runs on Unix systems only")
}

func (l *dataDirLock) release() error { return nil }
