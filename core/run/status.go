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

// runTransitions is the only definition of the Run state machine.
var runTransitions = map[RunStatus][]RunStatus{
	// Admission writes created and queued in one transaction; created →
	// cancelled is an occurrence refused before it was queued (for example
	// by the concurrency policy "forbid", recorded as run.skipped).
	RunCreated: {RunQueued, RunCancelled},
	RunQueued:  {RunDispatching, RunCancelled, RunTimedOut},
	// dispatching → queued: the RunLease expired or was released before
	// the starting ACK. Nothing ran, so the same Attempt is offered again
	// under lease generation + 1; it is never lost.
	RunDispatching: {RunQueued, RunRunning, RunRetryWait, RunFailed, RunCancelled, RunLost, RunTimedOut},
	RunRunning:     {RunSucceeded, RunFailed, RunCancelled, RunTimedOut, RunLost, RunRetryWait},
	RunRetryWait:   {RunQueued, RunCancelled, RunTimedOut},
	// lost → retry_wait: the policy retries lost workers and attempts are
	// left; the next Attempt waits for the backoff like any other retry
	// (never queued at once: the lost process may still be fencing itself).
	RunLost:      {RunRetryWait, RunFailed, RunCancelled},
	RunSucceeded: nil,
	RunFailed:    nil,
	RunCancelled: nil,
	RunTimedOut:  nil,
}

// attemptTransitions is the only definition of the Attempt state machine.
var attemptTransitions = map[AttemptStatus][]AttemptStatus{
	AttemptClaimed:   {AttemptStarting, AttemptCancelled, AttemptLost},
	AttemptStarting:  {AttemptRunning, AttemptFailed, AttemptCancelled, AttemptTimedOut, AttemptLost},
	AttemptRunning:   {AttemptSucceeded, AttemptFailed, AttemptCancelled, AttemptTimedOut, AttemptLost},
	AttemptSucceeded: nil,
	AttemptFailed:    nil,
	AttemptCancelled: nil,
	AttemptTimedOut:  nil,
	AttemptLost:      nil,
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
	_, ok := runTransitions[s]
	return ok
}

// Terminal reports whether no transition leaves s. Lost is not terminal.
func (s RunStatus) Terminal() bool {
	next, ok := runTransitions[s]
	return ok && len(next) == 0
}

// Valid reports whether s is a known Attempt status.
func (s AttemptStatus) Valid() bool {
	_, ok := attemptTransitions[s]
	return ok
}

// Terminal reports whether no transition leaves s.
func (s AttemptStatus) Terminal() bool {
	next, ok := attemptTransitions[s]
	return ok && len(next) == 0
}

// RunTransitionAllowed reports whether a Run may move from → to.
func RunTransitionAllowed(from, to RunStatus) bool {
	for _, s := range runTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// AttemptTransitionAllowed reports whether an Attempt may move from → to.
func AttemptTransitionAllowed(from, to AttemptStatus) bool {
	for _, s := range attemptTransitions[from] {
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
