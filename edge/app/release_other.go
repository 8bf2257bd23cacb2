//go:build !linux

package app

import "runtime/debug"

// releaseIdleMemory returns the freed Go heap to the kernel (the executable
// page trim is Linux-only).
func releaseIdleMemory() error {
	debug.FreeOSMemory()
	return nil
}
