package logstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/ql3/ql3/core/errs"
)

// Chunk is one byte range of a log.
type Chunk struct {
	Offset     int64  // where Data starts
	Data       []byte // at most the requested limit, at most MaxReadBytes
	NextOffset int64  // Offset + len(Data): where the next read starts
	Size       int64  // bytes in the file when it was read
	Complete   bool   // no writer owns the log any more: it will not grow
	EOF        bool   // Complete and NextOffset == Size
	Truncated  bool   // the size cap discarded output (so far)
	BytesSeen  int64  // bytes the attempt produced, kept or not (0 if unknown)
}

// Read returns up to limit bytes starting at offset. limit 0 means
// MaxReadBytes; larger limits are clamped to it. An offset past the end of a
// complete log is invalid; past the end of a log that is still being written
// it yields an empty chunk.
func (s *Store) Read(runID string, attempt int, offset, limit int64) (Chunk, error) {
	limit, err := readRange(runID, attempt, offset, limit)
	if err != nil {
		return Chunk{}, err
	}
	_, a := s.watch(key{runID, attempt})
	return s.read(key{runID, attempt}, a, offset, limit)
}

// read does the I/O; a is the active-writer snapshot taken before the file
// was opened (nil: the log is complete).
func (s *Store) read(k key, a *activeLog, offset, limit int64) (Chunk, error) {
	f, err := os.Open(s.logPath(k))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if a != nil { // Create has registered the writer but not opened the file yet
				return Chunk{Offset: offset, NextOffset: offset}, nil
			}
			return Chunk{}, errs.NotFoundf("no log for run %s attempt %d", k.runID, k.attempt)
		}
		return Chunk{}, fmt.Errorf("logstore: open: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Chunk{}, fmt.Errorf("logstore: stat: %w", err)
	}
	c := Chunk{Offset: offset, NextOffset: offset, Size: st.Size(), Complete: a == nil}
	if a != nil {
		c.Truncated, c.BytesSeen = a.truncated, a.seen
	} else if m, ok := readMeta(s.metaPath(k)); ok {
		c.Truncated, c.BytesSeen = m.Truncated, m.BytesSeen
	} else {
		c.BytesSeen = c.Size
	}
	if offset > c.Size {
		if c.Complete {
			return Chunk{}, errs.Invalidf("offset", "%d is past the end of the log (%d bytes)", offset, c.Size)
		}
		return c, nil
	}
	n := min(limit, c.Size-offset)
	if n > 0 {
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return Chunk{}, fmt.Errorf("logstore: read: %w", err)
		}
		c.Data = buf[:got]
		c.NextOffset = offset + int64(got)
	}
	c.EOF = c.Complete && c.NextOffset >= c.Size
	return c, nil
}

// readRange validates a read's key and range and returns the effective
// limit (0 and anything above MaxReadBytes mean MaxReadBytes).
func readRange(runID string, attempt int, offset, limit int64) (int64, error) {
	if err := validateKey(runID, attempt); err != nil {
		return 0, err
	}
	if offset < 0 {
		return 0, errs.Invalidf("offset", "must not be negative, got %d", offset)
	}
	if limit < 0 {
		return 0, errs.Invalidf("limit", "must not be negative, got %d", limit)
	}
	if limit == 0 || limit > MaxReadBytes {
		limit = MaxReadBytes
	}
	return limit, nil
}

// Follow is Read with tail -f semantics: when no bytes exist past offset and
// the log is still being written, it blocks until bytes arrive, the writer
// closes (the chunk then reports EOF) or ctx ends (ctx.Err() is returned
// with an empty chunk).
func (s *Store) Follow(ctx context.Context, runID string, attempt int, offset, limit int64) (Chunk, error) {
	limit, err := readRange(runID, attempt, offset, limit)
	if err != nil {
		return Chunk{}, err
	}
	k := key{runID, attempt}
	for {
		// Take the change channel before reading so a write that lands
		// between the read and the wait still wakes us.
		changed, a := s.watch(k)
		c, err := s.read(k, a, offset, limit)
		if err != nil || len(c.Data) > 0 || c.Complete {
			return c, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Chunk{Offset: offset, NextOffset: offset, Size: c.Size, Truncated: c.Truncated, BytesSeen: c.BytesSeen}, ctx.Err()
		}
	}
}

// Info describes a log without reading its content: Data is empty and
// Offset is the file size.
func (s *Store) Info(runID string, attempt int) (Chunk, error) {
	if err := validateKey(runID, attempt); err != nil {
		return Chunk{}, err
	}
	k := key{runID, attempt}
	_, a := s.watch(k)
	st, err := os.Stat(s.logPath(k))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Chunk{}, errs.NotFoundf("no log for run %s attempt %d", runID, attempt)
		}
		return Chunk{}, fmt.Errorf("logstore: stat: %w", err)
	}
	c := Chunk{Offset: st.Size(), NextOffset: st.Size(), Size: st.Size(), Complete: a == nil}
	switch {
	case a != nil:
		c.Truncated, c.BytesSeen = a.truncated, a.seen
	default:
		if m, ok := readMeta(s.metaPath(k)); ok {
			c.Truncated, c.BytesSeen = m.Truncated, m.BytesSeen
		} else {
			c.BytesSeen = c.Size
		}
	}
	c.EOF = c.Complete
	return c, nil
}
