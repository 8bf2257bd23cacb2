package ingress

import (
	"strconv"
	"testing"
	"time"
)

func TestFailureLimiter(t *testing.T) {
	now := time.Unix(1_000, 0)
	clock := func() time.Time { return now }
	l := newFailureLimiter(clock, 3, 10*time.Second, 2)
	if l.exhausted("a") {
		t.Fatal("a key that never failed is limited")
	}
	for i := 0; i < 3; i++ {
		if !l.charge("a") {
			t.Fatalf("failure %d is within the burst", i+1)
		}
	}
	if !l.exhausted("a") || l.charge("a") {
		t.Fatal("the burst is spent: the key must be limited")
	}
	if l.exhausted("b") {
		t.Fatal("limits are per key")
	}
	now = now.Add(10 * time.Second) // one token back
	if l.exhausted("a") || !l.charge("a") || !l.exhausted("a") {
		t.Fatal("one refill allows exactly one more failure")
	}
	// Bounded: with the map full of keys that still owe, a new key is not
	// tracked (never limited); once one has refilled it is evicted.
	l.charge("b")
	if !l.charge("c") || l.exhausted("c") || len(l.buckets) != 2 {
		t.Fatalf("a third key in a full map: %d buckets", len(l.buckets))
	}
	now = now.Add(time.Minute)
	l.charge("c")
	if len(l.buckets) != 2 {
		t.Fatalf("eviction kept %d buckets", len(l.buckets))
	}
}

func TestFailureLimiterStaysBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newFailureLimiter(func() time.Time { return now }, 2, time.Second, 100)
	for i := 0; i < 10_000; i++ {
		l.charge(strconv.Itoa(i))
	}
	if len(l.buckets) > 100 {
		t.Fatalf("%d buckets, bound 100", len(l.buckets))
	}
}
