package run

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestAfterAttempt(t *testing.T) {
	three := Retry{MaxAttempts: 3}
	cases := []struct {
		name    string
		end     AttemptStatus
		class   ErrorClass
		attempt int
		retry   Retry
		want    RunStatus
		errFld  string
	}{
		{"success", AttemptSucceeded, "", 1, three, RunSucceeded, ""},
		{"exit, attempts left", AttemptFailed, ErrorProcessExit, 1, three, RunRetryWait, ""},
		{"exit, second of three", AttemptFailed, ErrorProcessExit, 2, three, RunRetryWait, ""},
		{"exit, last attempt", AttemptFailed, ErrorProcessExit, 3, three, RunFailed, ""},
		{"exit, single attempt", AttemptFailed, ErrorProcessExit, 1, Retry{MaxAttempts: 1}, RunFailed, ""},
		{"start failure retried", AttemptFailed, ErrorExecutorStart, 1, three, RunRetryWait, ""},
		{"dispatch retried", AttemptFailed, ErrorDispatch, 2, three, RunRetryWait, ""},
		{"validation never retried", AttemptFailed, ErrorValidation, 1, three, RunFailed, ""},
		{"internal never retried", AttemptFailed, ErrorInternal, 1, three, RunFailed, ""},
		{"timeout terminal", AttemptTimedOut, ErrorTimeout, 1, three, RunTimedOut, ""},
		{"cancel terminal", AttemptCancelled, ErrorCancelledByUser, 1, three, RunCancelled, ""},
		{"lost goes through lost", AttemptLost, ErrorWorkerLost, 1, Retry{MaxAttempts: 3, RetryOnLost: true}, RunLost, ""},
		{"success with class", AttemptSucceeded, ErrorInternal, 1, three, "", "errorClass"},
		{"failed as timeout", AttemptFailed, ErrorTimeout, 1, three, "", "errorClass"},
		{"failed as cancel", AttemptFailed, ErrorCancelledByUser, 1, three, "", "errorClass"},
		{"failed as lost", AttemptFailed, ErrorWorkerLost, 1, three, "", "errorClass"},
		{"lost without class", AttemptLost, "", 1, three, "", "errorClass"},
		{"timed out as exit", AttemptTimedOut, ErrorProcessExit, 1, three, "", "errorClass"},
		{"still running", AttemptRunning, "", 1, three, "", "status"},
		{"claimed", AttemptClaimed, "", 1, three, "", "status"},
		{"attempt 0", AttemptSucceeded, "", 0, three, "", "attemptNumber"},
		{"attempt beyond policy", AttemptFailed, ErrorProcessExit, 4, three, "", "attemptNumber"},
		{"policy 0", AttemptSucceeded, "", 1, Retry{}, "", "retry.maxAttempts"},
		{"policy 17", AttemptSucceeded, "", 1, Retry{MaxAttempts: 17}, "", "retry.maxAttempts"},
	}
	for _, c := range cases {
		got, err := AfterAttempt(c.end, c.class, c.attempt, c.retry)
		if c.errFld != "" {
			if errs.Code(err) != errs.Invalid || errs.Field(err) != c.errFld {
				t.Errorf("%s: err = %v, want invalid %s", c.name, err, c.errFld)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: AfterAttempt = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// Whatever AfterAttempt decides is a move the Run table allows from
// running, so deciding and compare-and-setting can never disagree.
func TestAfterAttemptAgreesWithTable(t *testing.T) {
	for _, end := range AttemptStatuses() {
		if !end.Terminal() {
			continue
		}
		for _, class := range append(ErrorClasses(), "") {
			for attempt := 1; attempt <= 3; attempt++ {
				to, err := AfterAttempt(end, class, attempt, Retry{MaxAttempts: 3, RetryOnLost: true})
				if err != nil {
					continue
				}
				if !RunTransitionAllowed(RunRunning, to) {
					t.Errorf("AfterAttempt(%s, %s, %d) = %s: running → %s not allowed", end, class, attempt, to, to)
				}
			}
		}
	}
}

func TestAfterLost(t *testing.T) {
	cases := []struct {
		attempt int
		retry   Retry
		want    RunStatus
	}{
		{1, Retry{MaxAttempts: 3, RetryOnLost: true}, RunRetryWait},
		{2, Retry{MaxAttempts: 3, RetryOnLost: true}, RunRetryWait},
		{3, Retry{MaxAttempts: 3, RetryOnLost: true}, RunFailed},
		{1, Retry{MaxAttempts: 3, RetryOnLost: false}, RunFailed},
		{1, Retry{MaxAttempts: 1, RetryOnLost: true}, RunFailed},
	}
	for _, c := range cases {
		got, err := AfterLost(c.attempt, c.retry)
		if err != nil || got != c.want {
			t.Errorf("AfterLost(%d, %+v) = %q, %v; want %q", c.attempt, c.retry, got, err, c.want)
		}
		if !RunTransitionAllowed(RunLost, got) {
			t.Errorf("lost → %s not allowed by the table", got)
		}
	}
	if _, err := AfterLost(0, Retry{MaxAttempts: 3}); errs.Field(err) != "attemptNumber" {
		t.Errorf("AfterLost(0): %v", err)
	}
}
