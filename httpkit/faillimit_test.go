package httpkit

import (
	"fmt"
	"testing"
	"time"
)

func TestFailLimiter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := NewFailLimiter(3, time.Minute)
	for i := range 3 {
		if !l.Allow("a", t0) {
			t.Fatalf("refused after %d failures", i)
		}
		l.Fail("a", t0.Add(time.Duration(i)*time.Second))
	}
	if l.Allow("a", t0.Add(30*time.Second)) {
		t.Fatal("allowed past the limit inside the window")
	}
	if !l.Allow("b", t0) {
		t.Fatal("another peer refused")
	}
	if !l.Allow("a", t0.Add(time.Minute)) {
		t.Fatal("refused after the window ended")
	}
	// The table is bounded: beyond its capacity old peers give way.
	for i := range 5000 {
		l.Fail(fmt.Sprint(i), t0)
	}
	if n := len(l.m); n > l.cap {
		t.Fatalf("%d peers tracked, cap %d", n, l.cap)
	}
}
