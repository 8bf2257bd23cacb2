package agent

import (
	"context"
	"sync"
	"time"

	"github.com/ql3/ql3/worker/clock"
)

// fencer stops a process group when its lease lapses locally, on its own
// goroutine so a loop blocked on the network cannot delay it (ADR 0019).
type fencer struct {
	clk    clock.Clock
	notify func()

	mu     sync.Mutex
	items  map[string]fenceItem
	fired  []string
	update chan struct{}
}

type fenceItem struct {
	at   time.Time
	proc Process
	log  func()
	kill bool // a cancel's shortened grace: SIGKILL now, not a fence
}

func newFencer(clk clock.Clock, notify func()) *fencer {
	return &fencer{clk: clk, notify: notify, items: map[string]fenceItem{}, update: make(chan struct{}, 1)}
}

func (f *fencer) set(id string, at time.Time, proc Process, log func()) {
	f.mu.Lock()
	f.items[id] = fenceItem{at: at, proc: proc, log: log}
	f.mu.Unlock()
	f.kick()
}

// killAt SIGKILLs proc at at (a cancel whose grace is shorter than the
// executor's); it is not a fence and reports nothing.
func (f *fencer) killAt(id string, at time.Time, proc Process) {
	f.mu.Lock()
	f.items[id+"#kill"] = fenceItem{at: at, proc: proc, log: func() {}, kill: true}
	f.mu.Unlock()
	f.kick()
}

func (f *fencer) remove(id string) {
	f.mu.Lock()
	delete(f.items, id)
	delete(f.items, id+"#kill")
	f.mu.Unlock()
	f.kick()
}

func (f *fencer) kick() {
	select {
	case f.update <- struct{}{}:
	default:
	}
}

// takeFired returns the ids fenced since the last call.
func (f *fencer) takeFired() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fired
	f.fired = nil
	return out
}

// check stops every group whose fence time has come and returns the
// earliest fence time still ahead (zero when none). The loop calls it at
// each step as well, so a lagging fencer goroutine never delays a fence
// past the loop's own next pass.
func (f *fencer) check(now time.Time) time.Time {
	f.mu.Lock()
	var next time.Time
	fired := false
	for id, it := range f.items {
		if !now.Before(it.at) {
			delete(f.items, id)
			if it.kill {
				it.proc.Kill()
				continue
			}
			it.log()
			it.proc.Stop(StopFence)
			f.fired = append(f.fired, id)
			fired = true
			continue
		}
		if next.IsZero() || it.at.Before(next) {
			next = it.at
		}
	}
	f.mu.Unlock()
	if fired {
		f.notify()
	}
	return next
}

func (f *fencer) run(ctx context.Context) {
	for {
		next := f.check(f.clk.Now())
		var tc <-chan time.Time
		var t clock.Timer
		if !next.IsZero() {
			// Measured again here: the clock may have moved since check
			// read it, and a timer armed late would fence late.
			t = f.clk.NewTimer(next.Sub(f.clk.Now()))
			tc = t.C()
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-f.update:
		case <-tc:
		}
		if t != nil {
			t.Stop()
		}
	}
}
