//go:build !linux

package executor

import (
	"context"
	"errors"
)

var errUnsupported = errors.New("executor: the local executor needs Linux (/proc, process groups, waitid)")

func supported() error { return errUnsupported }

func becomeSubreaper() error { return errUnsupported }

// Start is unavailable off Linux; New already refused.
func (e *Executor) Start(slot *Slot, req Request) (*Handle, error) {
	if slot != nil {
		slot.Release()
	}
	return nil, &StartError{Err: errUnsupported}
}

// BootID is unknown off Linux.
func BootID() string { return "" }

// ReadIdentity is unavailable off Linux.
func ReadIdentity(pid int) (Identity, error) { return Identity{}, errUnsupported }

// Alive cannot be decided off Linux; it reports false.
func (id Identity) Alive() bool { return false }

// FindProcesses is unavailable off Linux.
func FindProcesses(runID string, attempt int, leader Identity) ([]Identity, error) {
	return nil, errUnsupported
}

// OrphanReport says what TerminateOrphans found and did.
type OrphanReport struct {
	Found     int
	Remaining int
}

// TerminateOrphans is unavailable off Linux.
func (e *Executor) TerminateOrphans(ctx context.Context, runID string, attempt int, leader Identity) (OrphanReport, error) {
	return OrphanReport{}, errUnsupported
}

// Containment off Linux: none.
func Containment() string { return "none: not Linux" }

// ContainmentNotes off Linux: nothing to add.
func ContainmentNotes() string { return "" }

type cgroupHost struct{}

type attemptGroup struct{}

func cgroups() *cgroupHost { return nil }
