package protocol

import (
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
)

// Completion reports how an attempt ended (PathLeaseComplete). The worker
// journals it before sending and repeats it until it gets a
// CompletionReceipt; the authority records it once.
//
// Status and ErrorClass must agree:
//
//	succeeded  errorClass ""                 exitCode 0, no signal
//	failed     process_exit                  a non-zero exitCode or a signal (exactly one)
//	failed     executor_start                no exitCode, no signal (the process never ran)
//	failed     internal                      the worker could not run or watch it
//	timed_out  timeout                       exitCode/signal as observed after the kill
//	cancelled  cancelled_by_user             exitCode/signal as observed after the kill
//
// A worker never reports lost: that is the authority's verdict on silence.
// StartedAtMs and FinishedAtMs are the worker's clock, kept for display
// only; the authority stamps state changes with its own clock.
type Completion struct {
	V int `json:"v"`
	LeaseRef
	Status       run.AttemptStatus `json:"status"`
	ErrorClass   run.ErrorClass    `json:"errorClass,omitempty"`
	ExitCode     *int              `json:"exitCode,omitempty"`
	Signal       string            `json:"signal,omitempty"` // e.g. "SIGKILL"
	StartedAtMs  int64             `json:"startedAtMs,omitempty"`
	FinishedAtMs int64             `json:"finishedAtMs"`
	StdoutBytes  int64             `json:"stdoutBytes"` // stream lengths as uploaded
	StderrBytes  int64             `json:"stderrBytes"`
	LogTruncated bool              `json:"logTruncated,omitempty"` // output beyond the log cap was dropped
	// MaskedCount is how many occurrences of env values the worker
	// replaced by "***" in the uploaded output (ADR 0051).
	MaskedCount int64 `json:"maskedCount,omitempty"`
}

// DecodeCompletion strictly decodes and validates a Completion.
func DecodeCompletion(data []byte) (Completion, error) {
	var c Completion
	if err := decode(data, flat, &c, &c.V); err != nil {
		return Completion{}, err
	}
	if err := c.Validate(); err != nil {
		return Completion{}, err
	}
	return c, nil
}

// Validate checks every field and the status/errorClass/exit agreement.
func (c Completion) Validate() error {
	if err := checkVersion(c.V); err != nil {
		return err
	}
	if err := c.LeaseRef.Validate(); err != nil {
		return err
	}
	if c.ExitCode != nil {
		if err := checkRange("exitCode", int64(*c.ExitCode), 0, 255); err != nil {
			return err
		}
	}
	if err := checkSignal(c.Signal); err != nil {
		return err
	}
	if err := c.checkOutcome(); err != nil {
		return err
	}
	if err := checkPositive("finishedAtMs", c.FinishedAtMs); err != nil {
		return err
	}
	if err := checkRange("startedAtMs", c.StartedAtMs, 0, c.FinishedAtMs); err != nil {
		return err
	}
	if err := checkRange("stdoutBytes", c.StdoutBytes, 0, MaxLogBytes); err != nil {
		return err
	}
	if err := checkRange("maskedCount", c.MaskedCount, 0, MaxLogBytes); err != nil {
		return err
	}
	return checkRange("stderrBytes", c.StderrBytes, 0, MaxLogBytes)
}

func (c Completion) checkOutcome() error {
	var want run.ErrorClass
	switch c.Status {
	case run.AttemptSucceeded:
		if c.ErrorClass != "" {
			return errs.Invalidf("errorClass", "must be empty when status is succeeded")
		}
		if c.ExitCode == nil || *c.ExitCode != 0 || c.Signal != "" {
			return errs.Invalidf("exitCode", "must be 0 without a signal when status is succeeded")
		}
		return nil
	case run.AttemptFailed:
		switch c.ErrorClass {
		case run.ErrorProcessExit:
			exited := c.ExitCode != nil && *c.ExitCode != 0
			if exited == (c.Signal != "") {
				return errs.Invalidf("exitCode", "process_exit needs exactly one of a non-zero exitCode or a signal")
			}
		case run.ErrorExecutorStart:
			if c.ExitCode != nil || c.Signal != "" {
				return errs.Invalidf("exitCode", "must be absent for executor_start: the process never ran")
			}
		case run.ErrorInternal:
		default:
			return errs.Invalidf("errorClass", "must be process_exit, executor_start or internal when status is failed")
		}
		return nil
	case run.AttemptTimedOut:
		want = run.ErrorTimeout
	case run.AttemptCancelled:
		want = run.ErrorCancelledByUser
	default:
		return errs.Invalidf("status", "must be succeeded, failed, timed_out or cancelled")
	}
	if c.ErrorClass != want {
		return errs.Invalidf("errorClass", "must be %s when status is %s", want, c.Status)
	}
	return nil
}

// checkSignal accepts "" or a signal name: SIG followed by 1..12 of [A-Z0-9].
func checkSignal(s string) error {
	if s == "" {
		return nil
	}
	if len(s) < 4 || len(s) > 15 || s[:3] != "SIG" {
		return errs.Invalidf("signal", "must be a signal name such as SIGKILL")
	}
	for i := 3; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return errs.Invalidf("signal", "must be a signal name such as SIGKILL")
		}
	}
	return nil
}

// Encode validates c (with v set) and returns its JSON.
func (c Completion) Encode() ([]byte, error) {
	c.V = Version
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return encode(c, DefaultBodyBytes, "completion")
}

// Disposition says what the authority did with a Completion.
type Disposition string

// Dispositions. In each case the worker may drop its journal entry.
const (
	// Recorded: this completion ended the attempt.
	Recorded Disposition = "recorded"
	// Duplicate: the same completion had already been recorded.
	Duplicate Disposition = "duplicate"
	// Late: the lease was genuine but the attempt had already ended
	// otherwise (lost, cancelled, timed out); the completion was kept as
	// an attempt.late_callback event and changed nothing else. A fence
	// that does not match at all is a conflict error, not a receipt.
	Late Disposition = "late"
)

// CompletionReceipt answers a Completion.
type CompletionReceipt struct {
	V           int         `json:"v"`
	AttemptID   string      `json:"attemptId"`
	Disposition Disposition `json:"disposition"`
}

// DecodeCompletionReceipt strictly decodes and validates a receipt.
func DecodeCompletionReceipt(data []byte) (CompletionReceipt, error) {
	var r CompletionReceipt
	if err := decode(data, flat, &r, &r.V); err != nil {
		return CompletionReceipt{}, err
	}
	if err := r.Validate(); err != nil {
		return CompletionReceipt{}, err
	}
	return r, nil
}

// Validate checks every field.
func (r CompletionReceipt) Validate() error {
	if err := checkVersion(r.V); err != nil {
		return err
	}
	if err := checkID("attemptId", r.AttemptID); err != nil {
		return err
	}
	switch r.Disposition {
	case Recorded, Duplicate, Late:
		return nil
	}
	return errs.Invalidf("disposition", "must be recorded, duplicate or late")
}

// Encode validates r (with v set) and returns its JSON.
func (r CompletionReceipt) Encode() ([]byte, error) {
	r.V = Version
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return encode(r, DefaultBodyBytes, "completion receipt")
}
