package ingress

import (
	"sync"
	"time"
)

// failureLimiter is a token bucket per key that only failures draw from
// (ADR-0236: a fixed per-peer rate starved healthy heartbeats into 429).
// A key that never failed is not even stored, so a healthy worker is never
// limited, whatever its request rate. The map is bounded: when it is full,
// a bucket that has refilled completely is evicted; when none has, the new
// key is not tracked (its failures are still refused, just not counted).
type failureLimiter struct {
	mu      sync.Mutex
	now     func() time.Time
	burst   float64
	perSec  float64
	max     int
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newFailureLimiter(now func() time.Time, burst int, refillEvery time.Duration, max int) *failureLimiter {
	return &failureLimiter{now: now, burst: float64(burst), perSec: 1 / refillEvery.Seconds(), max: max,
		buckets: make(map[string]*bucket)}
}

// refill brings b up to date; the caller holds mu.
func (l *failureLimiter) refill(b *bucket, now time.Time) {
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = min(l.burst, b.tokens+dt*l.perSec)
	}
	b.at = now
}

// exhausted reports whether key has used up its failures; it charges
// nothing.
func (l *failureLimiter) exhausted(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		return false
	}
	l.refill(b, l.now())
	return b.tokens < 1
}

// charge records one failure of key and reports whether key had a token
// left for it (false: the failure is over the limit).
func (l *failureLimiter) charge(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= l.max && !l.evict(now) {
			return true
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// evict drops one bucket that is full again; the caller holds mu.
func (l *failureLimiter) evict(now time.Time) bool {
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= l.burst {
			delete(l.buckets, k)
			return true
		}
	}
	return false
}
