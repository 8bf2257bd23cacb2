package run

import "github.com/ql3/ql3/core/errs"

// Retry is the part of a task's retry policy (pinned on the Run at
// admission) that decides whether another Attempt follows.
type Retry struct {
	MaxAttempts int  // total attempts, first included: 1..16
	RetryOnLost bool // a lost worker counts as a retryable failure
}

// AfterAttempt returns the status a running or dispatching Run moves to
// when its Attempt number attempt (1-based) ended in end with class. It is
// the one place edge and cluster decide retries:
//
//	succeeded                 → succeeded
//	cancelled                 → cancelled
//	timed_out                 → timed_out (the time budget is spent; never retried)
//	failed, retryable, left   → retry_wait (then queued after the backoff)
//	failed, otherwise         → failed
//	lost                      → lost (then AfterLost decides)
//
// The class must fit the end status (succeeded has none; lost is
// worker_lost; cancelled is cancelled_by_user; timed_out is timeout).
func AfterAttempt(end AttemptStatus, class ErrorClass, attempt int, r Retry) (RunStatus, error) {
	if err := checkRetry(attempt, r); err != nil {
		return "", err
	}
	switch end {
	case AttemptSucceeded, AttemptCancelled, AttemptTimedOut, AttemptLost:
		if want := endClass(end); class != want {
			return "", errs.Invalidf("errorClass", "must be %q when the attempt ended %s, got %q", want, end, class)
		}
	case AttemptFailed:
		switch class {
		case ErrorValidation, ErrorDispatch, ErrorExecutorStart, ErrorProcessExit, ErrorInternal:
		default:
			return "", errs.Invalidf("errorClass", "%q is not a failure class", class)
		}
	default:
		return "", errs.Invalidf("status", "attempt status %q has not ended", end)
	}
	switch end {
	case AttemptSucceeded:
		return RunSucceeded, nil
	case AttemptCancelled:
		return RunCancelled, nil
	case AttemptTimedOut:
		return RunTimedOut, nil
	case AttemptLost:
		return RunLost, nil
	}
	if class.Retryable(r.RetryOnLost) && attempt < r.MaxAttempts {
		return RunRetryWait, nil
	}
	return RunFailed, nil
}

// AfterLost returns the status a lost Run moves to: retry_wait (a new
// Attempt after the policy's backoff, see spec.RetryPolicy.BackoffMs) when
// the policy retries lost workers and attempts are left, failed otherwise.
// A lost Run whose cancel was requested goes to cancelled instead; that is
// the caller's check, not the retry policy's.
func AfterLost(attempt int, r Retry) (RunStatus, error) {
	if err := checkRetry(attempt, r); err != nil {
		return "", err
	}
	if ErrorWorkerLost.Retryable(r.RetryOnLost) && attempt < r.MaxAttempts {
		return RunRetryWait, nil
	}
	return RunFailed, nil
}

// endClass is the only error class each non-failure end status may carry
// (a switch, not a map: no init code in every binary, see runNext).
func endClass(end AttemptStatus) ErrorClass {
	switch end {
	case AttemptCancelled:
		return ErrorCancelledByUser
	case AttemptTimedOut:
		return ErrorTimeout
	case AttemptLost:
		return ErrorWorkerLost
	}
	return ""
}

func checkRetry(attempt int, r Retry) error {
	if r.MaxAttempts < 1 || r.MaxAttempts > 16 {
		return errs.Invalidf("retry.maxAttempts", "must be 1..16, got %d", r.MaxAttempts)
	}
	if attempt < 1 || attempt > r.MaxAttempts {
		return errs.Invalidf("attemptNumber", "must be 1..%d, got %d", r.MaxAttempts, attempt)
	}
	return nil
}
