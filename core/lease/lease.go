// Package lease is the cluster's one lease, heartbeat and fence policy
// (DESIGN.md §3 and §8). Three leases exist and this is where they meet:
//
//   - the claim lease a scheduler replica holds on a trigger's schedule row
//     (ClaimMs; unrelated to workers);
//   - the session lease of a worker, renewed by each heartbeat (SessionMs,
//     HeartbeatMs);
//   - the attempt lease (RunLease), unstarted until the starting ACK
//     (UnstartedMs), then started and renewed by each heartbeat
//     (StartedMs).
//
// A worker fences itself: when its view of a lease is FenceMarginMs +
// KillGraceMs from lapsing with no renewal, it stops the process group on
// its own. The authority calls a started attempt lost CancelGraceMs past
// the lease's end. So a heartbeat interval is only safe when a renewal
// arrives before the worker's give-up point; Validate refuses a policy
// where it cannot. The package is pure (no clock, no I/O) and linked by the
// worker.
package lease

import (
	"time"

	"github.com/ql3/ql3/core/errs"
)

// Defaults (DESIGN.md §8).
const (
	DefaultClaimMs       = 30_000
	DefaultHeartbeatMs   = 10_000
	DefaultSessionMs     = 45_000
	DefaultUnstartedMs   = 30_000
	DefaultStartedMs     = 45_000
	DefaultCancelGraceMs = 10_000
	DefaultFenceMarginMs = 5_000
	DefaultKillGraceMs   = 10_000
)

// Bounds an operator may configure.
const (
	MinClaimMs       = 1_000
	MaxClaimMs       = 60_000
	MinHeartbeatMs   = 5_000
	MaxHeartbeatMs   = 60_000
	MaxSessionMs     = 600_000
	MinLeaseMs       = 1_000 // unstarted and started attempt leases
	MaxLeaseMs       = 600_000
	MaxCancelGraceMs = 300_000
	MaxFenceMarginMs = 60_000
	MaxKillGraceMs   = 300_000
)

// Policy is the whole lease, heartbeat and fence policy, in milliseconds.
// The control plane fills the authority's side from its configuration and
// takes FenceMarginMs and KillGraceMs as the workers' defaults; a worker
// fills its own margins and takes the authority's side as the defaults.
type Policy struct {
	// ClaimMs is the scheduler's claim lease on one schedule row.
	ClaimMs int64
	// HeartbeatMs is the interval the authority names to workers.
	HeartbeatMs int64
	// SessionMs is a worker session's lease, renewed by each heartbeat.
	SessionMs int64
	// UnstartedMs is an offer's lease until its starting ACK.
	UnstartedMs int64
	// StartedMs is a started attempt's lease, renewed by each heartbeat.
	StartedMs int64
	// CancelGraceMs is how long past a started lease's end the authority
	// waits before it calls the attempt lost; also the SIGTERM → SIGKILL
	// grace it asks of a worker on cancel.
	CancelGraceMs int64
	// FenceMarginMs and KillGraceMs are the worker's: it stops an attempt
	// FenceMarginMs + KillGraceMs before its lease lapses, sending SIGTERM
	// and SIGKILL KillGraceMs later.
	FenceMarginMs int64
	KillGraceMs   int64
}

// Default returns the default policy.
func Default() Policy {
	return Policy{ClaimMs: DefaultClaimMs, HeartbeatMs: DefaultHeartbeatMs, SessionMs: DefaultSessionMs,
		UnstartedMs: DefaultUnstartedMs, StartedMs: DefaultStartedMs, CancelGraceMs: DefaultCancelGraceMs,
		FenceMarginMs: DefaultFenceMarginMs, KillGraceMs: DefaultKillGraceMs}
}

// GiveUpMs is how long after its last renewal a worker stops a running
// attempt on its own: the started lease less the fence margin and the kill
// grace.
func (p Policy) GiveUpMs() int64 { return p.StartedMs - p.FenceMarginMs - p.KillGraceMs }

// Validate checks each value against its bounds and the values against
// each other; an error names the field (the names of Policy's fields in
// lowerCamelCase) and, for a relation, both values.
func (p Policy) Validate() error {
	for _, r := range []struct {
		field  string
		v      int64
		lo, hi int64
	}{
		{"claimMs", p.ClaimMs, MinClaimMs, MaxClaimMs},
		{"heartbeatMs", p.HeartbeatMs, MinHeartbeatMs, MaxHeartbeatMs},
		{"sessionMs", p.SessionMs, 2 * MinHeartbeatMs, MaxSessionMs},
		{"unstartedMs", p.UnstartedMs, MinLeaseMs, MaxLeaseMs},
		{"startedMs", p.StartedMs, MinLeaseMs, MaxLeaseMs},
		{"cancelGraceMs", p.CancelGraceMs, 1, MaxCancelGraceMs},
		{"fenceMarginMs", p.FenceMarginMs, 1, MaxFenceMarginMs},
		{"killGraceMs", p.KillGraceMs, 1, MaxKillGraceMs},
	} {
		if r.v < r.lo || r.v > r.hi {
			return errs.Invalidf(r.field, "must be %d..%d, got %d", r.lo, r.hi, r.v)
		}
	}
	if p.SessionMs < 2*p.HeartbeatMs {
		return errs.Invalidf("sessionMs", "must cover two heartbeats of heartbeatMs %d (≥ %d), got %d",
			p.HeartbeatMs, 2*p.HeartbeatMs, p.SessionMs)
	}
	if g := p.GiveUpMs(); p.HeartbeatMs >= g {
		return errs.Invalidf("heartbeatMs", "must be less than startedMs %d − fenceMarginMs %d − killGraceMs %d = %d "+
			"(a worker stops a running attempt that long after its last renewal), got %d",
			p.StartedMs, p.FenceMarginMs, p.KillGraceMs, g, p.HeartbeatMs)
	}
	return nil
}

// D converts a millisecond value of the policy to a duration.
func D(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
