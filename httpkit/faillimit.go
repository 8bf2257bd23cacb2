package httpkit

import (
	"sync"
	"time"
)

// FailLimiter counts failed credential checks per peer address in a
// fixed window: after max failures a peer is refused until its window
// ends. Successful requests cost nothing. The table is bounded; when it
// is full, entries whose window ended go first, then the oldest.
type FailLimiter struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	cap    int
	m      map[string]failWindow
}

type failWindow struct {
	start time.Time
	n     int
}

// NewFailLimiter allows max failures per peer in each window.
func NewFailLimiter(max int, window time.Duration) *FailLimiter {
	return &FailLimiter{max: max, window: window, cap: 4096, m: make(map[string]failWindow)}
}

// Allow reports whether peer may try again at now.
func (l *FailLimiter) Allow(peer string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.m[peer]
	if !ok || !now.Before(w.start.Add(l.window)) {
		return true
	}
	return w.n < l.max
}

// Fail records a failure of peer at now.
func (l *FailLimiter) Fail(peer string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.m[peer]
	if !ok || !now.Before(w.start.Add(l.window)) {
		if !ok && len(l.m) >= l.cap {
			l.evictLocked(now)
		}
		w = failWindow{start: now}
	}
	w.n++
	l.m[peer] = w
}

func (l *FailLimiter) evictLocked(now time.Time) {
	var oldest string
	var at time.Time
	for k, w := range l.m {
		if !now.Before(w.start.Add(l.window)) {
			delete(l.m, k)
			continue
		}
		if oldest == "" || w.start.Before(at) {
			oldest, at = k, w.start
		}
	}
	if len(l.m) >= l.cap {
		delete(l.m, oldest)
	}
}
