package run

import "github.com/ql3/ql3/core/errs"

// EventType names a RunEvent. RunEvents are append-only and ordered per Run.
// Status events record the Run entering a status and are appended in the
// same transaction as the compare-and-set that made the move; annotation
// events record a fact that changes no Run status.
type EventType string

// Status events: each records the Run entering the status named in its
// comment (EventType.RunStatus).
const (
	EventCreated EventType = "run.created" // → created (admission)
	// EventQueued: → queued at admission, when a retry_wait is due (payload
	// attemptNumber N+1), or dispatching → queued when the lease ended
	// before the starting ACK (payload reason lease_expired or
	// lease_released, the same attemptNumber, the next leaseGeneration).
	EventQueued         EventType = "run.queued"
	EventDispatched     EventType = "run.dispatched"      // → dispatching (a RunLease claim made an offer)
	EventRunning        EventType = "run.running"         // → running (running ACK of the current Attempt)
	EventSucceeded      EventType = "run.succeeded"       // → succeeded
	EventFailed         EventType = "run.failed"          // → failed (payload errorClass says why)
	EventCancelled      EventType = "run.cancelled"       // → cancelled
	EventTimedOut       EventType = "run.timed_out"       // → timed_out
	EventLost           EventType = "run.lost"            // → lost (lease expired or worker gone)
	EventRetryScheduled EventType = "run.retry_scheduled" // → retry_wait (payload retryAtMs), after a failure or from lost
	// EventSkipped replaces run.cancelled for created → cancelled when the
	// occurrence is refused before it was queued, e.g. concurrency "forbid"
	// while an earlier Run of the task is still active.
	EventSkipped EventType = "run.skipped" // → cancelled
)

// Annotation events: no Run status changes.
const (
	// EventStarting records the starting ACK of an Attempt (claimed →
	// starting); the Run stays dispatching until the running ACK.
	EventStarting EventType = "run.starting"
	// EventCancelRequested records a user's cancel request for an active
	// Run; the Run moves to cancelled when the executor confirms or the
	// lease runs out.
	EventCancelRequested EventType = "run.cancel_requested"
	// EventLeaseReleased records a RunLease released before the start
	// barrier (expired unstarted, given back, or its session closed): the
	// same transaction moves the Run dispatching → queued (run.queued), and
	// the same Attempt is offered again under the next lease generation.
	EventLeaseReleased EventType = "run.lease_released"
	// EventLateCallback records a callback (ACK, completion) for an Attempt
	// that had already ended or whose fence no longer held; it changes
	// nothing else.
	EventLateCallback EventType = "attempt.late_callback"
)

// eventStatus is the status a status event records the Run entering, ""
// for an annotation event; ok is false for an unknown type (a switch, not a
// map: no init code in every binary, see runNext).
func eventStatus(e EventType) (s RunStatus, ok bool) {
	switch e {
	case EventCreated:
		return RunCreated, true
	case EventQueued:
		return RunQueued, true
	case EventDispatched:
		return RunDispatching, true
	case EventRunning:
		return RunRunning, true
	case EventSucceeded:
		return RunSucceeded, true
	case EventFailed:
		return RunFailed, true
	case EventCancelled, EventSkipped:
		return RunCancelled, true
	case EventTimedOut:
		return RunTimedOut, true
	case EventLost:
		return RunLost, true
	case EventRetryScheduled:
		return RunRetryWait, true
	case EventStarting, EventCancelRequested, EventLeaseReleased, EventLateCallback:
		return "", true
	}
	return "", false
}

// EventTypes lists every event type.
func EventTypes() []EventType {
	return []EventType{EventCreated, EventQueued, EventDispatched, EventStarting, EventRunning,
		EventSucceeded, EventFailed, EventCancelled, EventTimedOut, EventLost, EventRetryScheduled,
		EventSkipped, EventCancelRequested, EventLeaseReleased, EventLateCallback}
}

// Valid reports whether e is a known event type.
func (e EventType) Valid() bool {
	_, ok := eventStatus(e)
	return ok
}

// RunStatus returns the status a status event records the Run entering;
// ok is false for annotation events and unknown types.
func (e EventType) RunStatus() (status RunStatus, ok bool) {
	s, _ := eventStatus(e)
	return s, s != ""
}

// EventFor returns the status event that records a Run entering to.
func EventFor(to RunStatus) (EventType, error) {
	switch to {
	case RunCreated:
		return EventCreated, nil
	case RunQueued:
		return EventQueued, nil
	case RunDispatching:
		return EventDispatched, nil
	case RunRunning:
		return EventRunning, nil
	case RunRetryWait:
		return EventRetryScheduled, nil
	case RunLost:
		return EventLost, nil
	case RunSucceeded:
		return EventSucceeded, nil
	case RunFailed:
		return EventFailed, nil
	case RunCancelled:
		return EventCancelled, nil
	case RunTimedOut:
		return EventTimedOut, nil
	}
	return "", errs.Invalidf("status", "unknown run status %q", string(to))
}

// CheckEvent verifies that event e may record the move from → to: the move
// is allowed and e is a status event for to (run.skipped only for
// created → cancelled).
func CheckEvent(from, to RunStatus, e EventType) error {
	if err := Transition(from, to); err != nil {
		return err
	}
	target, ok := e.RunStatus()
	if !ok || target != to {
		return errs.Invalidf("type", "event %q does not record a move to %s", string(e), to)
	}
	if e == EventSkipped && from != RunCreated {
		return errs.Invalidf("type", "run.skipped records only created → cancelled, not %s → %s", from, to)
	}
	return nil
}

// ErrorClass says, with low cardinality, why an Attempt or Run did not
// succeed.
type ErrorClass string

// Error classes (DESIGN.md §2).
const (
	ErrorValidation      ErrorClass = "validation"        // the spec or revision was refused before running
	ErrorDispatch        ErrorClass = "dispatch"          // no executor could be found or claimed
	ErrorExecutorStart   ErrorClass = "executor_start"    // the process could not be started
	ErrorProcessExit     ErrorClass = "process_exit"      // the process ended unsuccessfully (exit code or signal)
	ErrorCancelledByUser ErrorClass = "cancelled_by_user" // a user cancelled it
	ErrorTimeout         ErrorClass = "timeout"           // the timeout elapsed
	ErrorWorkerLost      ErrorClass = "worker_lost"       // the lease expired or the worker vanished
	ErrorInternal        ErrorClass = "internal"          // a ql3 bug or unexpected dependency failure
)

// ErrorClasses lists every error class.
func ErrorClasses() []ErrorClass {
	return []ErrorClass{ErrorValidation, ErrorDispatch, ErrorExecutorStart, ErrorProcessExit,
		ErrorCancelledByUser, ErrorTimeout, ErrorWorkerLost, ErrorInternal}
}

// Valid reports whether c is a known error class.
func (c ErrorClass) Valid() bool {
	switch c {
	case ErrorValidation, ErrorDispatch, ErrorExecutorStart, ErrorProcessExit,
		ErrorCancelledByUser, ErrorTimeout, ErrorWorkerLost, ErrorInternal:
		return true
	}
	return false
}

// Retryable reports whether the task's retry policy may spend another
// attempt on a failure of class c. Refusals (validation), user intent
// (cancelled_by_user), the time budget (timeout: timed_out is terminal for
// the Run) and ql3's own bugs (internal, fail closed) never retry; a lost
// worker retries only when the policy's retryOnLost says so.
func (c ErrorClass) Retryable(retryOnLost bool) bool {
	switch c {
	case ErrorDispatch, ErrorExecutorStart, ErrorProcessExit:
		return true
	case ErrorWorkerLost:
		return retryOnLost
	}
	return false
}

// ParseErrorClass converts stored or wire text into an ErrorClass.
func ParseErrorClass(s string) (ErrorClass, error) {
	if c := ErrorClass(s); c.Valid() {
		return c, nil
	}
	return "", errs.Invalidf("errorClass", "unknown error class %q", s)
}
