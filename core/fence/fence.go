// Package fence holds the two fences that guard ql3's authority: the
// ClaimFence on a trigger schedule row (which replica may admit its next
// occurrence) and the LeaseFence on a RunLease (which worker session may
// execute an Attempt). Each is a plain value with one comparison function,
// Holds, that reports the first part that drifted as a low-cardinality
// Reason; callers turn a drift into a conflict and never into a retry with
// weaker checks.
//
// Expiry is a half-open interval: a fence is live while now < expiresAt and
// expired from now == expiresAt on. The instant of expiry belongs to the
// next holder, matching the SQL form "expires_at_ms > now_ms" for a live
// claim and "expires_at_ms <= now_ms" for a takeover. "now" is always the
// authority's clock (PostgreSQL clock_timestamp() in the cluster), passed
// in by the caller.
package fence

import (
	"errors"

	"github.com/ql3/ql3/core/errs"
)

// Reason names the part of a fence that no longer matches. The set is small
// and fixed so it can label metrics and audit lines.
type Reason string

// Drift reasons, checked in this order (identity before freshness).
const (
	ReasonUnset             Reason = "unset" // the caller's own fence is empty: it never held authority
	ReasonOwner             Reason = "owner"
	ReasonRun               Reason = "run"
	ReasonAttempt           Reason = "attempt"
	ReasonWorker            Reason = "worker"
	ReasonSession           Reason = "session"
	ReasonSessionGeneration Reason = "session_generation"
	ReasonOffer             Reason = "offer"
	ReasonToken             Reason = "token"
	ReasonLeaseGeneration   Reason = "lease_generation"
	ReasonVersion           Reason = "version" // claim version or lease version
	ReasonExpiry            Reason = "expiry"  // the expiry changed without a version change: fail closed
	ReasonExpired           Reason = "expired" // everything matches but now >= expiresAt
)

// DriftError reports a fence that does not hold. errs.Code(err) is
// errs.Conflict.
type DriftError struct {
	Fence  string // "claim" or "lease"
	Reason Reason
}

func (e *DriftError) Error() string {
	return e.Fence + " fence does not hold: " + string(e.Reason)
}

// Unwrap exposes the coded error, so errs.Code and errors.As see a conflict.
func (e *DriftError) Unwrap() error {
	return errs.Conflictf("%s fence does not hold: %s", e.Fence, e.Reason)
}

// ReasonOf returns the drift reason carried by err, if any.
func ReasonOf(err error) (Reason, bool) {
	var d *DriftError
	if errors.As(err, &d) {
		return d.Reason, true
	}
	return "", false
}

func drift(fence string, r Reason) error {
	return &DriftError{Fence: fence, Reason: r}
}

// Expired reports whether a fence expiring at expiresAtMs is expired at
// nowMs (the boundary instant counts as expired).
func Expired(expiresAtMs, nowMs int64) bool {
	return nowMs >= expiresAtMs
}
