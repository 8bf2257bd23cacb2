package run

import "github.com/ql3/ql3/core/spec"

// LostDecision is what becomes of a lost Run: its next status and, for
// retry_wait, how long after now its next Attempt may be queued.
type LostDecision struct {
	Status    RunStatus // RunRetryWait or RunFailed
	BackoffMs int64     // retry_wait only (0 otherwise): not_before = now + BackoffMs
}

// DecideLost decides a Run whose Attempt number attempt (1-based) was lost,
// by the retry policy pinned on the Run: retry_wait after
// p.BackoffMs(attempt) (base·2^(attempt−1), capped) when p.RetryOnLost and
// attempts are left (AfterLost), failed otherwise. The cluster's sweeper
// selects the rows in SQL and writes what this returns; a cancel intent on
// the Run (→ cancelled) is the caller's check, as for AfterLost.
func DecideLost(attempt int, p spec.RetryPolicy) (LostDecision, error) {
	st, err := AfterLost(attempt, Retry{MaxAttempts: p.MaxAttempts, RetryOnLost: p.RetryOnLost})
	if err != nil {
		return LostDecision{}, err
	}
	d := LostDecision{Status: st}
	if st == RunRetryWait {
		d.BackoffMs = p.BackoffMs(attempt)
	}
	return d, nil
}
