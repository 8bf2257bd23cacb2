// Package schedule decides, purely, what a cron trigger's scheduler does at
// an observation time: initialise the cursor, wait, fire one occurrence, or
// skip a missed one (DESIGN.md §2 "Scheduling decisions", ADR 0002).
//
// The cursor (State.NextFireAtMs) is the next occurrence not yet decided.
// The rules, in order:
//
//   - No state, or state of another trigger revision: Init. The cursor
//     becomes the first occurrence strictly after max(now, activation); a
//     new or republished trigger never fires retroactively.
//   - now < cursor: Wait.
//   - Due and at most GraceMs late: Fire the cursor, then move the cursor to
//     the first occurrence strictly after now. Occurrences in between (a
//     scheduler that fell behind) are not replayed; they are counted in
//     Missed.
//   - Later than GraceMs: policy skip → Skip (no run; the cursor counts as
//     missed too); policy fire_once → Fire exactly one occurrence, the
//     cursor itself (the oldest missed one, so every replica computes the
//     same idempotency key). Either way the cursor moves past now, so a
//     backlog is never replayed.
//   - Lateness is measured at the moment the cursor was first seen due by a
//     scheduler that took it on (State.SeenDueAtMs, a cluster claim) when
//     that scheduler died or stalled before its decision committed: the
//     time the occurrence then spent under the dead claim, and until
//     another replica took it over, is never charged against the grace
//     (ADR 0002 rule 5). Only the misfire test uses it; the new cursor
//     still moves past now.
//
// The caller persists Decision.NextFireAtMs (and, for Fire,
// ScheduledForMs as the last scheduled occurrence) with a compare-and-set,
// and creates the Run with IdempotencyKey in the same transaction.
package schedule

import (
	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
)

// MisfirePolicy says what happens to an occurrence found later than the grace.
type MisfirePolicy string

const (
	MisfireSkip     MisfirePolicy = "skip"
	MisfireFireOnce MisfirePolicy = "fire_once"
)

// Valid reports whether p is a known policy.
func (p MisfirePolicy) Valid() bool { return p == MisfireSkip || p == MisfireFireOnce }

const (
	// DefaultEdgeGraceMs is the edge's misfire grace (DESIGN.md §8).
	DefaultEdgeGraceMs = 30_000
	// MaxGraceMs is the hard limit on any misfire grace.
	MaxGraceMs = 300_000
	// MaxMissedCount bounds the occurrences Decide counts as missed; beyond
	// it Decision.MissedCapped is set (an every-second trigger after a
	// day-long outage would otherwise cost 86,400 Next calls).
	MaxMissedCount = 10_000
)

// Trigger is what Decide needs of a trigger revision.
type Trigger struct {
	ID            string
	Revision      int64
	Cron          *cron.Schedule
	Misfire       MisfirePolicy
	GraceMs       int64
	ActivatedAtMs int64 // when this revision was published; no occurrence at or before it fires
}

// Validate checks the trigger; errors name the offending field.
func (t Trigger) Validate() error {
	switch {
	case !validTriggerID(t.ID):
		return errs.Invalidf("id", "must be 1..%d characters of [A-Za-z0-9._-], got %q", MaxTriggerIDBytes, t.ID)
	case t.Revision < 0:
		return errs.Invalidf("revision", "must not be negative, got %d", t.Revision)
	case t.Cron == nil:
		return errs.Invalidf("expression", "must be set")
	case !t.Misfire.Valid():
		return errs.Invalidf("misfirePolicy", "must be %q or %q, got %q", MisfireSkip, MisfireFireOnce, t.Misfire)
	case t.GraceMs < 0 || t.GraceMs > MaxGraceMs:
		return errs.Invalidf("misfireGraceMs", "must be 0..%d, got %d", MaxGraceMs, t.GraceMs)
	}
	return nil
}

// State is the persisted schedule row (trigger_schedules) as Decide sees it.
type State struct {
	TriggerRevision   int64
	Initialized       bool
	NextFireAtMs      int64 // the cursor
	LastScheduledAtMs int64 // the last occurrence that fired; 0 if none
	// SeenDueAtMs is when a scheduler first claimed this cursor while it
	// was due, if every claim since ended without a committed decision (the
	// holder died or stalled past its lease and this decision is a
	// takeover); 0 otherwise. Lateness is measured at it instead of now, so
	// a replica's death never turns an occurrence it held into a misfire.
	// It is ignored unless NextFireAtMs <= SeenDueAtMs < now (anything else
	// cannot come from a claim of this cursor and excuses nothing).
	SeenDueAtMs int64
}

// Kind is the kind of a Decision.
type Kind int

const (
	Wait Kind = iota + 1 // not due; nothing to write
	Init                 // (re)initialise the cursor; no Run
	Fire                 // create the Run for ScheduledForMs, move the cursor
	Skip                 // no Run; move the cursor past the missed occurrences
)

func (k Kind) String() string {
	switch k {
	case Wait:
		return "wait"
	case Init:
		return "init"
	case Fire:
		return "fire"
	case Skip:
		return "skip"
	}
	return "unknown"
}

// Decision is what the scheduler does now.
type Decision struct {
	Kind Kind
	// ScheduledForMs is the occurrence that fires (Fire) or the oldest one
	// skipped (Skip); 0 for Wait and Init.
	ScheduledForMs int64
	// NextFireAtMs is the cursor to persist (Init, Fire, Skip) or the
	// unchanged cursor (Wait).
	NextFireAtMs int64
	// LateMs is now - ScheduledForMs for Fire and Skip: how late the
	// occurrence really is (the fire lag).
	LateMs int64
	// ChargedLateMs is the part of LateMs charged against the misfire
	// grace: LateMs minus the time since State.SeenDueAtMs, if that
	// applies. Equal to LateMs for a decision that is not a takeover.
	ChargedLateMs int64
	// Missed counts occurrences that will never run: those strictly between
	// ScheduledForMs and NextFireAtMs, plus the cursor itself for Skip.
	Missed int64
	// MissedCapped: counting stopped at MaxMissedCount; Missed is a lower bound.
	MissedCapped bool
}

// Decide is the scheduling decision for trigger t with persisted state s at
// nowMs (the authority clock). It is deterministic: every replica given the
// same inputs decides the same.
func Decide(t Trigger, s State, nowMs int64) (Decision, error) {
	if err := t.Validate(); err != nil {
		return Decision{}, err
	}
	if s.SeenDueAtMs < 0 {
		return Decision{}, errs.Invalidf("seenDueAtMs", "must not be negative, got %d", s.SeenDueAtMs)
	}
	// A cursor at or before the last fired occurrence would replay it; such
	// a row is corrupt, and re-initialising is the only safe repair.
	corrupt := s.LastScheduledAtMs != 0 && s.NextFireAtMs <= s.LastScheduledAtMs
	if !s.Initialized || s.TriggerRevision != t.Revision || corrupt {
		next, err := t.Cron.NextMs(max(nowMs, t.ActivatedAtMs))
		if err != nil {
			return Decision{}, err
		}
		return Decision{Kind: Init, NextFireAtMs: next}, nil
	}
	cursor := s.NextFireAtMs
	if nowMs < cursor {
		return Decision{Kind: Wait, NextFireAtMs: cursor}, nil
	}
	next, err := t.Cron.NextMs(nowMs)
	if err != nil {
		return Decision{}, err
	}
	missed, capped, err := countBetween(t.Cron, cursor, next)
	if err != nil {
		return Decision{}, err
	}
	seen := nowMs
	if cursor <= s.SeenDueAtMs && s.SeenDueAtMs < nowMs {
		seen = s.SeenDueAtMs
	}
	d := Decision{Kind: Fire, ScheduledForMs: cursor, NextFireAtMs: next, LateMs: nowMs - cursor,
		ChargedLateMs: seen - cursor, Missed: missed, MissedCapped: capped}
	if d.ChargedLateMs > t.GraceMs && t.Misfire == MisfireSkip {
		d.Kind = Skip
		d.Missed++
	}
	return d, nil
}

// countBetween counts occurrences strictly between from and to, up to
// MaxMissedCount.
func countBetween(s *cron.Schedule, from, to int64) (int64, bool, error) {
	var n int64
	for at := from; ; n++ {
		next, err := s.NextMs(at)
		if err != nil {
			return 0, false, err
		}
		if next >= to {
			return n, false, nil
		}
		if n == MaxMissedCount {
			return n, true, nil
		}
		at = next
	}
}
