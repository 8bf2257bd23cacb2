package coordinator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ql3/ql3/core/schedule"
)

// fakeClock hands out timers the test fires by hand; it records every wait
// the loop asked for.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	waits  []time.Duration
	timers []chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	f.waits = append(f.waits, d)
	f.timers = append(f.timers, ch)
	return ch
}

// fire fires every pending timer and returns how many there were.
func (f *fakeClock) fire() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.timers {
		ch <- f.now
	}
	n := len(f.timers)
	f.timers = nil
	return n
}

func (f *fakeClock) waited() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLoopCadenceWakeupsAndStop: with a fake clock the loop waits the
// cadence when nothing is scheduled, runs a round at once when a publish
// notification arrives (no timer fired), waits less than the cadence when a
// schedule is due sooner, and stops promptly, leaking no goroutine.
func TestLoopCadenceWakeupsAndStop(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := newFakeClock()
	pool := e.pool(t, "coord-loop")
	c, diags := newCoord(t, pool, Config{Owner: "replica-loop", Clock: clock, Cadence: 10 * time.Second})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Start: %v", err)
	}
	// Round 1 at start; round 2 when LISTEN is in place (it wakes the loop
	// once). With no timer fired, nothing else can run a round.
	waitFor(t, "two rounds", func() bool { return c.Metrics().Rounds.Load() >= 2 })
	for _, d := range clock.waited() {
		if d != 10*time.Second && d > time.Second {
			t.Fatalf("idle loop waited %v, want the 10 s cadence", d)
		}
	}
	e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	waitFor(t, "the publish notification to initialise the trigger", func() bool { return c.Metrics().Initialized.Load() == 1 })
	if c.Metrics().Notifications.Load() < 1 {
		t.Fatal("no notification counted")
	}
	// The next fire is at most a second away: the loop asks for less than
	// the cadence, and firing that timer (repeatedly, until the database
	// clock reaches the occurrence) admits it.
	waitFor(t, "a short wait", func() bool {
		w := clock.waited()
		return w[len(w)-1] < time.Second+time.Millisecond
	})
	waitFor(t, "an admission", func() bool {
		clock.fire()
		return c.Metrics().Admitted.Load() >= 1
	})
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if k := diags.kinds(); k["round_failed"] != 0 || k["listen_failed"] != 0 {
		t.Fatalf("diagnostics %v", k)
	}
	pool.Close()
}

// TestStopIsBoundedWhileARoundIsStuck: a round blocked in the database
// (its admission waits for a lock) does not hold Stop beyond StopTimeout;
// the round is cancelled, rolls back, and the occurrence is admitted once
// later.
func TestStopIsBoundedWhileARoundIsStuck(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tr := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	pool := e.pool(t, "coord-stuck")
	setup, _ := newCoord(t, pool, Config{Owner: "replica-setup"})
	initialiseAndWaitDue(t, e, setup, 1)

	locker := e.db.Conn(t)
	lockTx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTx.Exec(ctx, "LOCK TABLE ql3.runs IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	c, _ := newCoord(t, pool, Config{Owner: "replica-stuck", Clock: clock, DisableListen: true, Lease: time.Second})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the admission to block", func() bool {
		return e.count(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'coord-stuck' AND wait_event_type = 'Lock'`) == 1
	})
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(ctx) }()
	// Stop is waiting for the round; its deadline is the fake clock's.
	waitFor(t, "Stop to arm its deadline", func() bool { return clock.fire() > 0 })
	if err := <-stopped; !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop = %v, want ErrStopTimeout", err)
	}
	if err := lockTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs from the cancelled round", n)
	}
	next, _ := newCoord(t, pool, Config{Owner: "replica-next", Lease: time.Second})
	due := e.count(t, `SELECT coalesce(max(next_fire_at_ms), 0) FROM ql3.trigger_schedules`)
	roundUntil(t, next, 30*time.Second, func() bool { return e.runsFor(t, tr.ID, due) == 1 })
	assertExactlyOnce(t, e.su)
	pool.Close()
}

// TestStopAdmitsChainedClaims: while a backlog is worked through, every
// full round's admission claims the next batch in its round trip; Stop
// arriving between two rounds must still admit what was claimed (no claim
// left to run out, exactly one Run per admitted occurrence).
func TestStopAdmitsChainedClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.triggers(t, 60, "* * * * * *")
	c, _ := newCoord(t, e.pool(t, "coord-chain"), Config{Owner: "replica-chain", Budget: 2})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.Metrics().ClaimedChained.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	m := c.Metrics()
	if m.ClaimedChained.Load() < 20 {
		t.Fatalf("no chained claims while 60 triggers were due with budget 2: %s", metricsString(m))
	}
	runs := assertExactlyOnce(t, e.su)
	if runs != m.Admitted.Load() || m.Claimed.Load() != m.Admitted.Load()+m.Initialized.Load()+m.Skipped.Load()+m.Raced.Load() {
		t.Fatalf("%d runs; every claim must end admitted, initialised, skipped or raced: %s", runs, metricsString(m))
	}
}

// TestStopOfAnIdleCoordinatorEndsItsListenAtOnce: a coordinator with
// nothing to do is waiting in LISTEN. Stop ends that wait itself instead of
// through pgconn's cancel request, which an idle session ignores, so Stop
// returns without waiting out pgconn's 2 s fallback deadline (issue 13 item
// 16: before, every idle coordinator added 2 s to a graceful stop). The
// bound checked is that fallback, which the old path could never beat; the
// LISTEN session is gone from the server when Stop returns.
func TestStopOfAnIdleCoordinatorEndsItsListenAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	c, diags := newCoord(t, e.pool(t, "coord-idle"), Config{Owner: "replica-idle"})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the LISTEN session", func() bool {
		return e.count(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'coord-idle'
			AND query LIKE 'LISTEN %' AND state = 'idle'`) == 1
	})
	start := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("Stop of an idle coordinator took %v", took)
	if took >= 2*time.Second {
		t.Fatalf("Stop of an idle coordinator took %v: it waited for pgconn's cancel fallback", took)
	}
	waitFor(t, "the LISTEN session to end", func() bool {
		return e.count(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'coord-idle'
			AND query LIKE 'LISTEN %'`) == 0
	})
	if k := diags.kinds(); k["listen_failed"] != 0 {
		t.Fatalf("diagnostics %v", k)
	}
}

// TestListenBackoffStartsOverAfterASuccessfulListen: failures before LISTEN
// double the backoff up to its cap; a connection that got as far as
// LISTENing starts the sequence over.
func TestListenBackoffStartsOverAfterASuccessfulListen(t *testing.T) {
	var b time.Duration
	var seq []time.Duration
	for range 8 {
		b = nextListenBackoff(b, false)
		seq = append(seq, b)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if !slices.Equal(seq, want) {
		t.Fatalf("backoff without success %v, want %v", seq, want)
	}
	if got := nextListenBackoff(5*time.Second, true); got != listenBackoffMin {
		t.Fatalf("after a successful LISTEN the backoff is %v, want %v", got, listenBackoffMin)
	}
	if got := nextListenBackoff(0, false); got != listenBackoffMin {
		t.Fatalf("from zero: %v", got)
	}
}
