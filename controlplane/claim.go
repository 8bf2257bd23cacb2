package controlplane

import (
	"time"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/schedule"
)

// Claim limits (DESIGN.md §8).
const (
	DefaultClaimBudget = 16
	MaxClaimBudget     = 256
	DefaultClaimLease  = lease.DefaultClaimMs * time.Millisecond // core/lease's
	MinClaimLease      = lease.MinClaimMs * time.Millisecond
	MaxClaimLease      = lease.MaxClaimMs * time.Millisecond
	MaxClaimOwnerBytes = 128
)

// ClaimRequest asks for up to Budget due or uninitialised schedules.
type ClaimRequest struct {
	Owner  string        // the replica's identity, 1..128 bytes
	Budget int           // 1..MaxClaimBudget
	Lease  time.Duration // MinClaimLease..MaxClaimLease, whole milliseconds
}

// Validate checks the request against the hard limits.
func (r ClaimRequest) Validate() error {
	switch {
	case len(r.Owner) < 1 || len(r.Owner) > MaxClaimOwnerBytes:
		return errs.Invalidf("owner", "must be 1..%d bytes, got %d", MaxClaimOwnerBytes, len(r.Owner))
	case r.Budget < 1 || r.Budget > MaxClaimBudget:
		return errs.Invalidf("budget", "must be 1..%d, got %d", MaxClaimBudget, r.Budget)
	case r.Lease < MinClaimLease || r.Lease > MaxClaimLease:
		return errs.Invalidf("lease", "must be %v..%v, got %v", MinClaimLease, MaxClaimLease, r.Lease)
	}
	return nil
}

// TupleID is a row version's physical address in PostgreSQL (ctid): the
// block and the line pointer. Valid is false when none was read.
type TupleID struct {
	Block  uint32
	Offset uint16
	Valid  bool
}

// ClaimedSchedule is one schedule row a claim granted: the schedule state
// after the claim, the trigger revision it is at (what Decide needs) and the
// pins admission re-checks.
type ClaimedSchedule struct {
	// TupleID is the physical address (ctid) of the schedule row version
	// this claim wrote. Admission reads and updates the row through it (and
	// the trigger id): under SERIALIZABLE a TID scan takes a predicate lock
	// on that one tuple, where a primary-key lookup locks the whole index
	// leaf page — pages that every concurrent admission writes new index
	// entries into (its UPDATE moves the indexed cursor, so it is never HOT).
	// With two replicas that page-level read/write overlap failed about one
	// batch in seven with a serialization failure (ADR 0006). A row version
	// that is no longer there (updated after the claim, or moved by VACUUM
	// FULL) is simply not found: the admission reports raced, as for any
	// lost fence, and the claim runs out.
	TupleID             TupleID
	TriggerID           uuid.UUID
	ProjectID           uuid.UUID
	TaskID              uuid.UUID
	TriggerRevision     int64
	TaskRevision        int64
	ExecutionRevisionID uuid.UUID
	ExecutionDigest     canonjson.Digest

	Expression    string
	TimeZone      string
	Misfire       schedule.MisfirePolicy
	GraceMs       int64
	ActivatedAtMs int64

	Initialized       bool  // next_fire_at_ms was set
	NextFireAtMs      int64 // the cursor; 0 when not initialised
	LastScheduledAtMs int64 // 0 when nothing fired yet
	StateVersion      int64 // after the claim's bump

	Fence fence.ClaimFence
	// AcquiredAtMs is the database time the claim was taken: the "now"
	// Decide uses (ADR-0107: no node clock enters a decision). It never runs
	// backwards for a row (greatest(updated_at_ms, now)).
	AcquiredAtMs int64
	// ObservedAtMs is the row's updated_at_ms after the claim, which the
	// admission re-checks as part of the fence. For a fresh claim it is
	// AcquiredAtMs. For a takeover (the previous claim expired without an
	// admission: its holder died or stalled) the claim leaves updated_at_ms
	// alone, so it is the acquisition time of the first claim that saw the
	// cursor due, and stays so along a chain of dead claims (ADR 0002 rule 5).
	ObservedAtMs int64
}

// TakenOver reports whether this claim took the row over from a claim that
// expired without an admission.
func (c ClaimedSchedule) TakenOver() bool { return c.ObservedAtMs < c.AcquiredAtMs }

// State is the schedule as core/schedule.Decide sees it. A takeover carries
// the dead claim's observation, so the time the row spent under it is not
// charged against the misfire grace.
func (c ClaimedSchedule) State() schedule.State {
	s := schedule.State{TriggerRevision: c.TriggerRevision, Initialized: c.Initialized,
		NextFireAtMs: c.NextFireAtMs, LastScheduledAtMs: c.LastScheduledAtMs}
	if c.TakenOver() {
		s.SeenDueAtMs = c.ObservedAtMs
	}
	return s
}
