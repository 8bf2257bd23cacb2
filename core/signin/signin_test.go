package signin

import (
	"strings"
	"testing"
	"time"
)

func TestTenFailuresLock(t *testing.T) {
	p := DefaultPolicy
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var s State
	for i := 1; i <= 9; i++ {
		s = p.Fail(s, now)
		if p.Locked(s, now) {
			t.Fatalf("locked after %d failures", i)
		}
	}
	s = p.Fail(s, now)
	if !p.Locked(s, now) {
		t.Fatal("not locked after 10 failures")
	}
	if got, want := s.LockedUntil, now.Add(15*time.Minute).UnixMilli(); got != want {
		t.Fatalf("locked until %d, want %d", got, want)
	}
	if m := p.Message(s); !strings.Contains(m, "2026-12-01T12:15:00Z") || !strings.Contains(m, "10 failed") {
		t.Fatalf("message %q lacks the unlock time or the count", m)
	}
	// Failing while locked changes nothing (no extension by hammering).
	if s2 := p.Fail(s, now.Add(time.Minute)); s2 != s {
		t.Fatalf("a failure while locked changed the state: %+v", s2)
	}
	later := now.Add(15 * time.Minute)
	if p.Locked(s, later) {
		t.Fatal("still locked at the unlock time")
	}
	if s = p.Fail(s, later); s.Failures != 1 || p.Locked(s, later) {
		t.Fatalf("after the lock a failure starts a fresh count: %+v", s)
	}
	if s = p.Succeed(s); s != (State{}) {
		t.Fatalf("success did not reset: %+v", s)
	}
}
