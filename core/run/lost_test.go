package run

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// TestDecideLost: the lost cases the sweeper writes — retryOnLost or not,
// attempts left or not, the doubling backoff and its cap, no backoff.
func TestDecideLost(t *testing.T) {
	policy := func(maxAttempts int, onLost bool, base, limit int64) spec.RetryPolicy {
		return spec.RetryPolicy{MaxAttempts: maxAttempts, RetryOnLost: onLost, BackoffBaseMs: base, BackoffMaxMs: limit}
	}
	cases := []struct {
		name    string
		attempt int
		p       spec.RetryPolicy
		want    LostDecision
	}{
		{"retry, first attempt: the base", 1, policy(3, true, 1000, 8000), LostDecision{RunRetryWait, 1000}},
		{"retry, second attempt: doubled", 2, policy(3, true, 1000, 8000), LostDecision{RunRetryWait, 2000}},
		{"retry, doubling capped", 5, policy(16, true, 1000, 8000), LostDecision{RunRetryWait, 8000}},
		{"retry, cap below the base", 1, policy(3, true, 5000, 5000), LostDecision{RunRetryWait, 5000}},
		{"retry, no backoff", 1, policy(3, true, 0, 0), LostDecision{RunRetryWait, 0}},
		{"retry, large attempt does not overflow", 15, policy(16, true, 86_400_000, 86_400_000), LostDecision{RunRetryWait, 86_400_000}},
		{"no attempts left", 3, policy(3, true, 1000, 8000), LostDecision{RunFailed, 0}},
		{"single attempt", 1, policy(1, true, 1000, 8000), LostDecision{RunFailed, 0}},
		{"retryOnLost off", 1, policy(3, false, 1000, 8000), LostDecision{RunFailed, 0}},
		{"retryOnLost off, last attempt", 3, policy(3, false, 1000, 8000), LostDecision{RunFailed, 0}},
	}
	for _, c := range cases {
		got, err := DecideLost(c.attempt, c.p)
		if err != nil || got != c.want {
			t.Errorf("%s: DecideLost(%d, %+v) = %+v, %v; want %+v", c.name, c.attempt, c.p, got, err, c.want)
		}
		if !RunTransitionAllowed(RunLost, got.Status) {
			t.Errorf("%s: lost → %s not allowed by the table", c.name, got.Status)
		}
	}
	for _, c := range []struct {
		attempt int
		p       spec.RetryPolicy
		field   string
	}{
		{0, policy(3, true, 1000, 8000), "attemptNumber"},
		{4, policy(3, true, 1000, 8000), "attemptNumber"},
		{1, policy(0, true, 1000, 8000), "retry.maxAttempts"},
		{1, policy(17, true, 1000, 8000), "retry.maxAttempts"},
	} {
		if _, err := DecideLost(c.attempt, c.p); errs.Field(err) != c.field {
			t.Errorf("DecideLost(%d, %+v): %v, want an error on %s", c.attempt, c.p, err, c.field)
		}
	}
}
