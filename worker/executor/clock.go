package executor

import "github.com/ql3/ql3/worker/clock"

// Clock is the executor's time source: timeouts, the kill grace and the
// orphan polling run on it, so tests step a fake instead of sleeping. It is
// worker/clock's interface, so both ql3-worker and ql3-edge (which uses
// worker/clock too) pass their clock as is.
type Clock = clock.Clock

// Timer is the subset of *time.Timer the executor uses.
type Timer = clock.Timer
