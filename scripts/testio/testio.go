// Package testio holds small io helpers the tests of every module share.
package testio

import (
	"strings"
	"sync"
)

// Buffer collects what a logger or a process writes while tests read it:
// Write and String may be called from any goroutine (slog handlers write
// from every request's goroutine).
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
