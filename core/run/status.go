// Package run holds the lifecycle vocabulary of Runs and Attempts: their
// statuses, the one table that answers "may X go to Y", the RunEvent types
// and the error classes (DESIGN.md §2).
//
// A Run is one occurrence of a Task; an Attempt is one try of a Run on one
// executor. Storage adapters compare-and-set a status only after Transition
// (or TransitionAttempt) agreed, and append the matching RunEvent in the same
// transaction. A transition from a status to itself is never allowed: an
// unchanged status is not a transition, and an adapter that tries to write
// one has lost a race it must report as a conflict.
package run

import (
	"github.com/ql3/ql3/core/errs"
)

// RunStatus is the status of a Run.
type RunStatus string

// Run statuses (DESIGN.md §2). Lost is not terminal: the retry policy may
// queue the Run again, or the Run is failed or cancelled afterwards.
const (
	RunCreated     RunStatus = "created"
	RunQueued      RunStatus = "queued"
	RunDispatching RunStatus = "dispatching"
	RunRunning     RunStatus = "running"
	RunRetryWait   RunStatus = "retry_wait"
	RunLost        RunStatus = "lost"
	RunSucceeded   RunStatus = "succeeded"
	RunFailed      RunStatus = "failed"
	RunCancelled   RunStatus = "cancelled"
	RunTimedOut    RunStatus = "timed_out"
)

// AttemptStatus is the status of an Attempt.
type AttemptStatus string

// Attempt statuses (DESIGN.md §2). All five end states are final, lost
// included: a retry creates a new Attempt instead of reviving this one.
const (
	AttemptClaimed   AttemptStatus = "claimed"
	AttemptStarting  AttemptStatus = "starting"
	AttemptRunning   AttemptStatus = "running"
	AttemptSucceeded AttemptStatus = "succeeded"
	AttemptFailed    AttemptStatus = "failed"
	AttemptCancelled AttemptStatus = "cancelled"
	AttemptTimedOut  AttemptStatus = "timed_out"
	AttemptLost      AttemptStatus = "lost"
)

// The Run and Attempt state machines: runNext and attemptNext are their
// only definition. Switches over statically initialized slices, not maps:
// a package-level map literal is built by init code that every binary
// linking this package carries (the worker's size is capped, ADR 0020).
var (
	// Admission writes created and queued in one transaction; created →
	// cancelled is an occurrence refused before it was queued (for example
	// by the concurrency policy "forbid", recorded as run.skipped).
	runFromCreated = []RunStatus{RunQueued, RunCancelled}
	runFromQueued  = []RunStatus{RunDispatching, RunCancelled, RunTimedOut}
	// dispatching → queued: the RunLease expired or was released before
	// the starting ACK. Nothing ran, so the same Attempt is offered again
	// under lease generation + 1; it is never lost.
	runFromDispatching = []RunStatus{RunQueued, RunRunning, RunRetryWait, RunFailed, RunCancelled, RunLost, RunTimedOut}
	runFromRunning     = []RunStatus{RunSucceeded, RunFailed, RunCancelled, RunTimedOut, RunLost, RunRetryWait}
	runFromRetryWait   = []RunStatus{RunQueued, RunCancelled, RunTimedOut}
	// lost → retry_wait: the policy retries lost workers and attempts are
	// left; the next Attempt waits for the backoff like any other retry
	// (never queued at once: the lost process may still be fencing itself).
	runFromLost = []RunStatus{RunRetryWait, RunFailed, RunCancelled}

	attemptFromClaimed  = []AttemptStatus{AttemptStarting, AttemptCancelled, AttemptLost}
	attemptFromStarting = []AttemptStatus{AttemptRunning, AttemptFailed, AttemptCancelled, AttemptTimedOut, AttemptLost}
	attemptFromRunning  = []AttemptStatus{AttemptSucceeded, AttemptFailed, AttemptCancelled, AttemptTimedOut, AttemptLost}
)

// runNext is where a Run may go from s; ok is false for an unknown status.
// Terminal statuses have no next status.
func runNext(s RunStatus) (next []RunStatus, ok bool) {
	switch s {
	case RunCreated:
		return runFromCreated, true
	case RunQueued:
		return runFromQueued, true
	case RunDispatching:
		return runFromDispatching, true
	case RunRunning:
		return runFromRunning, true
	case RunRetryWait:
		return runFromRetryWait, true
	case RunLost:
		return runFromLost, true
	case RunSucceeded, RunFailed, RunCancelled, RunTimedOut:
		return nil, true
	}
	return nil, false
}

// attemptNext is where an Attempt may go from s; ok is false for an
// unknown status.
func attemptNext(s AttemptStatus) (next []AttemptStatus, ok bool) {
	switch s {
	case AttemptClaimed:
		return attemptFromClaimed, true
	case AttemptStarting:
		return attemptFromStarting, true
	case AttemptRunning:
		return attemptFromRunning, true
	case AttemptSucceeded, AttemptFailed, AttemptCancelled, AttemptTimedOut, AttemptLost:
		return nil, true
	}
	return nil, false
}

// RunStatuses lists every Run status in lifecycle order.
func RunStatuses() []RunStatus {
	return []RunStatus{RunCreated, RunQueued, RunDispatching, RunRunning, RunRetryWait,
		RunLost, RunSucceeded, RunFailed, RunCancelled, RunTimedOut}
}

// AttemptStatuses lists every Attempt status in lifecycle order.
func AttemptStatuses() []AttemptStatus {
	return []AttemptStatus{AttemptClaimed, AttemptStarting, AttemptRunning, AttemptSucceeded,
		AttemptFailed, AttemptCancelled, AttemptTimedOut, AttemptLost}
}

// Valid reports whether s is a known Run status.
func (s RunStatus) Valid() bool {
	_, ok := runNext(s)
	return ok
}

// Terminal reports whether no transition leaves s. Lost is not terminal.
func (s RunStatus) Terminal() bool {
	next, ok := runNext(s)
	return ok && len(next) == 0
}

// Valid reports whether s is a known Attempt status.
func (s AttemptStatus) Valid() bool {
	_, ok := attemptNext(s)
	return ok
}

// Terminal reports whether no transition leaves s.
func (s AttemptStatus) Terminal() bool {
	next, ok := attemptNext(s)
	return ok && len(next) == 0
}

// RunTransitionAllowed reports whether a Run may move from → to.
func RunTransitionAllowed(from, to RunStatus) bool {
	next, _ := runNext(from)
	for _, s := range next {
		if s == to {
			return true
		}
	}
	return false
}

// AttemptTransitionAllowed reports whether an Attempt may move from → to.
func AttemptTransitionAllowed(from, to AttemptStatus) bool {
	next, _ := attemptNext(from)
	for _, s := range next {
		if s == to {
			return true
		}
	}
	return false
}

// Transition returns nil when a Run may move from → to. An unknown status is
// errs.Invalid (field "status": corrupt input or a newer schema); a known but
// forbidden move is errs.Conflict (field "status"), which callers surface as
// a lost race or a request that came too late.
func Transition(from, to RunStatus) error {
	if !from.Valid() {
		return errs.Invalidf("status", "unknown run status %q", string(from))
	}
	if !to.Valid() {
		return errs.Invalidf("status", "unknown run status %q", string(to))
	}
	if !RunTransitionAllowed(from, to) {
		return errs.E(errs.Conflict, "status", "run may not move from %s to %s", from, to)
	}
	return nil
}

// TransitionAttempt is Transition for Attempts.
func TransitionAttempt(from, to AttemptStatus) error {
	if !from.Valid() {
		return errs.Invalidf("status", "unknown attempt status %q", string(from))
	}
	if !to.Valid() {
		return errs.Invalidf("status", "unknown attempt status %q", string(to))
	}
	if !AttemptTransitionAllowed(from, to) {
		return errs.E(errs.Conflict, "status", "attempt may not move from %s to %s", from, to)
	}
	return nil
}

// ParseRunStatus converts stored or wire text into a RunStatus.
func ParseRunStatus(s string) (RunStatus, error) {
	if st := RunStatus(s); st.Valid() {
		return st, nil
	}
	return "", errs.Invalidf("status", "unknown run status %q", s)
}

// ParseAttemptStatus converts stored or wire text into an AttemptStatus.
func ParseAttemptStatus(s string) (AttemptStatus, error) {
	if st := AttemptStatus(s); st.Valid() {
		return st, nil
	}
	return "", errs.Invalidf("status", "unknown attempt status %q", s)
}
