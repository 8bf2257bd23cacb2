package executor

import (
	"io"
	"sync"
)

// CapWriter is the output cap between an attempt's pipe and its sink: it
// passes the first Max bytes on to the sink and counts, but discards, the
// rest. Write never fails and never blocks on the cap, so the executor keeps
// draining the child's pipe and the child never stalls on a full pipe. A
// sink error (disk full, a closed spool) discards everything after it and
// counts as truncation; Summary reports the first such error.
//
// Nothing is buffered here: each Write goes straight to the sink, so an
// attempt's log is never held in memory (the edge's sink is a log file, the
// worker's an on-disk spool it uploads offset by offset). Safe for
// concurrent use; Summary may be read while the attempt runs.
type CapWriter struct {
	mu     sync.Mutex
	sink   io.Writer
	max    int64
	sum    CaptureSummary
	failed bool
}

// CaptureSummary is what a CapWriter saw.
type CaptureSummary struct {
	Bytes     int64 // passed to the sink (≤ the cap)
	BytesSeen int64 // produced by the attempt
	Truncated bool  // output was discarded: beyond the cap or after a sink error
	Err       error // the first sink error, if any
}

// NewCapWriter caps what reaches sink at max bytes (max ≤ 0 discards all).
func NewCapWriter(sink io.Writer, max int64) *CapWriter {
	return &CapWriter{sink: sink, max: max}
}

// Write passes p on up to the cap. It always reports len(p), nil.
func (c *CapWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum.BytesSeen += int64(len(p))
	keep := p
	if room := c.max - c.sum.Bytes; int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
		c.sum.Truncated = true
	}
	if len(keep) > 0 && !c.failed {
		n, err := c.sink.Write(keep)
		c.sum.Bytes += int64(n)
		if err == nil && n < len(keep) {
			err = io.ErrShortWrite
		}
		if err != nil {
			c.failed, c.sum.Truncated, c.sum.Err = true, true, err
		}
	} else if len(keep) > 0 {
		c.sum.Truncated = true
	}
	return len(p), nil
}

// Summary reports what was written and seen so far.
func (c *CapWriter) Summary() CaptureSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum
}
