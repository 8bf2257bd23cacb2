// Package clock is the injected time source of ql3-worker and of ql3-edge
// (which imports it with the process executor whose Clock names it: the one
// sideways arrow of DESIGN.md §1). Production code uses Real; tests use Fake
// and step it, so no test sleeps or asserts on the wall clock. Stdlib only.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer fires once after d (immediately for d ≤ 0).
	NewTimer(d time.Duration) Timer
}

// Timer is the subset of *time.Timer ql3 uses.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
}

// NowMs returns c.Now() as epoch milliseconds.
func NowMs(c Clock) int64 { return c.Now().UnixMilli() }

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Fake is a manual clock. Timers fire when Advance/Set moves the time to or
// past their deadline. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the set of timers changes
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer creates a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- f.now
		t.fired = true
		return t
	}
	f.timers = append(f.timers, t)
	f.notifyLocked()
	return t
}

// Advance moves the time forward by d, firing due timers in deadline order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the time to t (never backwards), firing due timers.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.setLocked(t)
	}
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	kept := f.timers[:0]
	for _, tm := range f.timers {
		if !tm.at.After(t) {
			tm.fired = true
			select {
			case tm.ch <- t:
			default:
			}
			continue
		}
		kept = append(kept, tm)
	}
	for i := len(kept); i < len(f.timers); i++ {
		f.timers[i] = nil
	}
	f.timers = kept
	f.notifyLocked()
}

// Waiters is the number of pending (armed, unfired) timers.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// Changed returns a channel closed the next time a timer is created, stopped
// or fired, so tests can wait for a goroutine to arm its timer without
// sleeping.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f     *Fake
	at    time.Time
	ch    chan time.Time
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.fired {
		return false
	}
	for i, tm := range t.f.timers {
		if tm == t {
			t.f.timers = append(t.f.timers[:i], t.f.timers[i+1:]...)
			t.f.notifyLocked()
			return true
		}
	}
	return false
}
