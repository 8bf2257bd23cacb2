package app

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ql3/ql3/worker/clock"
)

func TestShouldRelease(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q := 5 * time.Second
	cases := []struct {
		name      string
		now, last time.Time
		wake      time.Time
		released  bool
		want      bool
		wantWait  time.Duration
	}{
		{"busy a moment ago", t0.Add(2 * time.Second), t0, time.Time{}, false, false, 3 * time.Second},
		{"quiet long enough", t0.Add(5 * time.Second), t0, time.Time{}, false, true, 0},
		{"quiet, next fire far", t0.Add(6 * time.Second), t0, t0.Add(time.Hour), false, true, 0},
		{"quiet, but a fire is due soon", t0.Add(6 * time.Second), t0, t0.Add(8 * time.Second), false, false, 7 * time.Second},
		{"already released this quiet period", t0.Add(time.Hour), t0, time.Time{}, true, false, 0},
	}
	for _, c := range cases {
		got, wait := shouldRelease(c.now, c.last, c.wake, c.released, q)
		if got != c.want || wait != c.wantWait {
			t.Errorf("%s: release=%v wait=%v, want %v %v", c.name, got, wait, c.want, c.wantWait)
		}
	}
}

// TestIdleTrimReleasesOncePerQuietPeriod drives the loop with a fake clock:
// one release after the quiet period, none again until new activity, then
// one more after the next quiet period.
func TestIdleTrimReleasesOncePerQuietPeriod(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	released := make(chan struct{}, 4)
	tr := newIdleTrim(clk, 5*time.Second, func() error { released <- struct{}{}; return nil }, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// step waits for the loop to arm its quiet-period timer, steps the
	// clock past it and waits for the release.
	step := func() {
		t.Helper()
		bound := time.After(10 * time.Second) // a bound on the wait, never a pass condition
		for clk.Waiters() == 0 {
			changed := clk.Changed()
			if clk.Waiters() > 0 {
				break
			}
			select {
			case <-changed:
			case <-bound:
				t.Fatal("the loop never armed its timer")
			}
		}
		clk.Advance(5 * time.Second)
		select {
		case <-released:
		case <-bound:
			t.Fatal("no release after the quiet period")
		}
	}
	step()
	tr.mu.Lock()
	if !tr.released {
		t.Error("not marked released")
	}
	tr.mu.Unlock()
	if ok, _ := shouldRelease(clk.Now().Add(time.Hour), tr.lastActivity, tr.nextWake, true, 5*time.Second); ok {
		t.Fatal("a second release in one quiet period")
	}
	tr.activity()
	step()
}
