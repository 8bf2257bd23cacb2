package notify

import "github.com/ql3/ql3/core/errs"

// Coalesce caps how many notifications one rule sends for one task per
// window: a task failing every second produces at most Max messages per
// WindowMs, then one summary of how many were held back. Max 0 = no cap.
type Coalesce struct {
	Max      int
	WindowMs int64
}

// Limits of a coalescing setting.
const (
	MaxCoalesceMax    = 1000
	MaxCoalesceWindow = 24 * 3600 * 1000
)

// Validate checks the bounds; a cap needs a window.
func (c Coalesce) Validate() (Coalesce, error) {
	switch {
	case c.Max < 0 || c.Max > MaxCoalesceMax:
		return Coalesce{}, errs.Invalidf("max", "must be 0..%d, got %d", MaxCoalesceMax, c.Max)
	case c.Max > 0 && (c.WindowMs < 1000 || c.WindowMs > MaxCoalesceWindow):
		return Coalesce{}, errs.Invalidf("windowMs", "must be 1000..%d when max is set, got %d", MaxCoalesceWindow, c.WindowMs)
	case c.Max == 0 && c.WindowMs != 0:
		return Coalesce{}, errs.Invalidf("windowMs", "needs max (a cap per window)")
	}
	return c, nil
}

// CoalesceState is what the deliverer keeps per (rule, task).
type CoalesceState struct {
	WindowStartMs int64
	Sent          int
	Held          int // outcomes not sent in the current window
}

// Admit decides one outcome at atMs. send: deliver it. summary > 0: before
// it, the previous window ended with that many outcomes held back, and one
// summary message ("N more …") is due. The returned state replaces s.
func (c Coalesce) Admit(s CoalesceState, atMs int64) (send bool, summary int, next CoalesceState) {
	if c.Max == 0 {
		return true, 0, s
	}
	if s.Sent == 0 && s.Held == 0 || atMs >= s.WindowStartMs+c.WindowMs || atMs < s.WindowStartMs {
		summary = s.Held
		s = CoalesceState{WindowStartMs: atMs}
	}
	if s.Sent < c.Max {
		s.Sent++
		return true, summary, s
	}
	s.Held++
	return false, summary, s
}

// Flush reports, at atMs, a summary due for a window that ended with
// outcomes held back and no later outcome to carry it (the deliverer's
// tick calls it), and the state after.
func (c Coalesce) Flush(s CoalesceState, atMs int64) (summary int, next CoalesceState) {
	if c.Max == 0 || s.Held == 0 || atMs < s.WindowStartMs+c.WindowMs {
		return 0, s
	}
	return s.Held, CoalesceState{}
}
