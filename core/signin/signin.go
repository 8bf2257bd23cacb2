// Package signin is the sign-in lockout policy of ql3 accounts: how many
// wrong passwords lock an account, and for how long. It is pure: the
// caller passes the time and stores the State it gets back.
package signin

import (
	"fmt"
	"time"
)

// Policy is the lockout rule. After MaxFailures consecutive failures the
// account is locked for LockFor; a success resets the count.
type Policy struct {
	MaxFailures int
	LockFor     time.Duration
}

// DefaultPolicy: 10 wrong passwords lock the account for 15 minutes.
var DefaultPolicy = Policy{MaxFailures: 10, LockFor: 15 * time.Minute}

// State is what the store keeps per account.
type State struct {
	Failures    int   // consecutive failures since the last success or lock
	LockedUntil int64 // epoch ms; 0 or in the past means unlocked
}

// Locked reports whether the account refuses sign-ins at now.
func (p Policy) Locked(s State, now time.Time) bool {
	return s.LockedUntil > now.UnixMilli()
}

// Fail records a failed attempt at now. The returned State is locked when
// this failure is the MaxFailures-th in a row; the count then restarts, so
// a locked account that fails again after its lock ends gets MaxFailures
// fresh tries.
func (p Policy) Fail(s State, now time.Time) State {
	if p.Locked(s, now) {
		return s
	}
	s.Failures++
	if s.Failures >= p.MaxFailures {
		return State{LockedUntil: now.Add(p.LockFor).UnixMilli()}
	}
	return s
}

// Succeed records a successful sign-in: the count resets.
func (p Policy) Succeed(State) State { return State{} }

// Message is the refusal a locked account's user sees, with the unlock
// time in UTC.
func (p Policy) Message(s State) string {
	return fmt.Sprintf("this account is locked after %d failed sign-ins; try again after %s",
		p.MaxFailures, time.UnixMilli(s.LockedUntil).UTC().Format(time.RFC3339))
}
