package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ql3/ql3/worker/clock"
)

// idleQuietFor is how long the server must be quiet (no API request, no
// scheduler round, no fire due) before it gives idle memory back.
const idleQuietFor = 5 * time.Second

// idleTrim gives memory back once per quiet period: a burst of API calls or
// a crowd of admissions grows the Go heap and touches most of the binary's
// pages, and neither shrinks by itself while nothing happens (no GC runs
// without allocation, and touched file pages stay mapped). On a router that
// is memory the rest of the box could use. What is released comes back on
// use: the heap by allocation, code and read-only data as page faults served
// from the page cache (a few milliseconds at most for the next request or
// fire), so correctness never depends on it.
type idleTrim struct {
	clock    clock.Clock
	quietFor time.Duration
	release  func() error
	log      *slog.Logger

	mu           sync.Mutex
	lastActivity time.Time
	nextWake     time.Time // the scheduler's planned wake-up
	released     bool      // released since the last activity
	kick         chan struct{}
}

func newIdleTrim(c clock.Clock, quietFor time.Duration, release func() error, log *slog.Logger) *idleTrim {
	return &idleTrim{clock: c, quietFor: quietFor, release: release, log: log,
		lastActivity: c.Now(), kick: make(chan struct{}, 1)}
}

// activity records work (an API request); it is cheap enough for every
// request.
func (t *idleTrim) activity() { t.note(time.Time{}) }

// schedulerSleeps records a scheduler round that ended with a sleep until
// the next fire.
func (t *idleTrim) schedulerSleeps(until time.Time) { t.note(until) }

func (t *idleTrim) note(wake time.Time) {
	t.mu.Lock()
	t.lastActivity = t.clock.Now()
	if !wake.IsZero() {
		t.nextWake = wake
	}
	wasReleased := t.released
	t.released = false
	t.mu.Unlock()
	if wasReleased {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

// shouldRelease is the decision: quiet for quietFor since the last activity,
// no fire due within quietFor, and not yet released in this quiet period.
// It also returns how long to wait before deciding again (0: wait for
// activity).
func shouldRelease(now, lastActivity, nextWake time.Time, released bool, quietFor time.Duration) (bool, time.Duration) {
	if released {
		return false, 0
	}
	quietAt := lastActivity.Add(quietFor)
	if now.Before(quietAt) {
		return false, quietAt.Sub(now)
	}
	if !nextWake.IsZero() && nextWake.Sub(now) < quietFor {
		// A fire is due soon; its round counts as activity and starts a
		// new quiet period.
		return false, max(nextWake.Sub(now), time.Millisecond) + quietFor
	}
	return true, 0
}

// run decides and releases until ctx ends.
func (t *idleTrim) run(ctx context.Context) {
	for {
		t.mu.Lock()
		ok, wait := shouldRelease(t.clock.Now(), t.lastActivity, t.nextWake, t.released, t.quietFor)
		if ok {
			t.released = true
		}
		t.mu.Unlock()
		if ok {
			if err := t.release(); err != nil {
				t.log.Debug("releasing idle memory", "err", err)
			}
			continue
		}
		var timerC <-chan time.Time
		var timer clock.Timer
		if wait > 0 {
			timer = t.clock.NewTimer(wait)
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-t.kick:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
