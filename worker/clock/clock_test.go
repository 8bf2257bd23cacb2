package clock

import (
	"testing"
	"time"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fired(t Timer) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

func TestFakeTimersFireInOrderWhenDue(t *testing.T) {
	f := NewFake(start)
	a := f.NewTimer(2 * time.Second)
	b := f.NewTimer(time.Second)
	if f.Waiters() != 2 {
		t.Fatalf("waiters %d", f.Waiters())
	}
	f.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("fired early")
	}
	f.Advance(time.Millisecond)
	if !fired(b) || fired(a) {
		t.Fatal("b should fire at exactly its deadline, a not yet")
	}
	f.Set(start.Add(time.Hour))
	if !fired(a) || f.Waiters() != 0 {
		t.Fatal("a should have fired")
	}
	if got := f.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("now %s", got)
	}
	f.Set(start) // never backwards
	if !f.Now().Equal(start.Add(time.Hour)) {
		t.Fatal("Set moved the clock backwards")
	}
	if NowMs(f) != start.Add(time.Hour).UnixMilli() {
		t.Fatal("NowMs")
	}
}

func TestFakeTimerStopAndImmediate(t *testing.T) {
	f := NewFake(start)
	tm := f.NewTimer(time.Second)
	changed := f.Changed()
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reported inactive")
	}
	select {
	case <-changed:
	default:
		t.Fatal("Stop did not signal Changed")
	}
	if tm.Stop() {
		t.Fatal("second Stop reported active")
	}
	f.Advance(time.Hour)
	if fired(tm) {
		t.Fatal("stopped timer fired")
	}
	now := f.NewTimer(0)
	if !fired(now) || now.Stop() {
		t.Fatal("a zero timer fires at once and is then inactive")
	}
}

func TestRealClock(t *testing.T) {
	var c Clock = Real{}
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	if tm.Stop() {
		t.Fatal("fired real timer reported active")
	}
	if c.Now().IsZero() {
		t.Fatal("zero time")
	}
}
