// Package logstore keeps the output of edge attempts in files.
//
// Layout: <dir>/<runID>/<attempt>.log holds stdout and stderr of one attempt
// interleaved in the order the kernel delivered them (both streams share one
// pipe, so there are no stream markers and no reordering). Next to it,
// <attempt>.meta records how the attempt's output ended: bytes kept, bytes
// seen, whether the size cap truncated it. Directories are 0700, files 0600.
//
// A log over the per-attempt cap (default 4 MiB, hard limit 1 GiB) keeps its
// first three quarters and its last quarter with a marker line between them
// saying how many bytes were dropped (Writer; ADR 0042). Nothing is buffered
// in memory: the tail waits in a ring file until the attempt ends. A Writer
// always accepts every byte so the executor keeps draining the child's pipe
// and the child never blocks on a full pipe. Reads are by byte range (at most 1 MiB per call) and Follow gives
// tail -f semantics: it blocks until bytes past the offset exist, the attempt
// finished, or the context ends. No call loads a whole log into memory.
//
// Retention (Sweep) removes finished logs older than the retention age
// (default 7 days, 1 day when the file system is short of space) and then the
// oldest finished logs until the total is under the size budget
// (default 512 MiB). Logs still being written are never removed.
package logstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/worker/executor"
)

// Defaults and hard limits (DESIGN.md §8).
const (
	DefaultMaxBytesPerAttempt int64 = 4 << 20
	HardMaxBytesPerAttempt    int64 = 1 << 30
	DefaultRetainAge                = 7 * 24 * time.Hour
	DefaultPressureRetainAge        = 24 * time.Hour
	DefaultRetainTotalBytes   int64 = 512 << 20
	// DefaultPressureFreeFraction: below this share of free space on the log
	// file system, Sweep uses the shorter pressure retention age.
	DefaultPressureFreeFraction = 0.10
	// MaxReadBytes bounds one Read or Follow call.
	MaxReadBytes int64 = 1 << 20
	// MaxAttempt bounds the attempt number in a file name.
	MaxAttempt = 1 << 20

	logSuffix  = ".log"
	metaSuffix = ".meta"
	tailSuffix = ".tail"
	dirMode    = 0o700
	fileMode   = 0o600
)

// Config configures a Store. Zero values take the defaults.
type Config struct {
	Dir                  string // required; created 0700 if missing
	MaxBytesPerAttempt   int64  // 1..HardMaxBytesPerAttempt
	RetainAge            time.Duration
	PressureRetainAge    time.Duration
	RetainTotalBytes     int64
	PressureFreeFraction float64 // 0..1; negative disables the pressure rule
	// FreeSpace reports free and total bytes of the file system holding Dir;
	// nil uses statfs. Tests inject it.
	FreeSpace func(dir string) (free, total uint64, err error)
}

// Store is the per-attempt log file store. It is safe for concurrent use.
type Store struct {
	cfg Config

	mu     sync.Mutex
	active map[key]*activeLog
}

type key struct {
	runID   string
	attempt int
}

// activeLog is the in-memory state of a log that a Writer still owns; Follow
// waits on changed, which is closed and replaced on every write and on close.
type activeLog struct {
	size      int64
	seen      int64
	truncated bool
	changed   chan struct{}
}

// Open validates cfg, applies defaults and creates the directory.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errs.Invalidf("logs.dir", "must be set")
	}
	if cfg.MaxBytesPerAttempt == 0 {
		cfg.MaxBytesPerAttempt = DefaultMaxBytesPerAttempt
	}
	if cfg.MaxBytesPerAttempt < 1 || cfg.MaxBytesPerAttempt > HardMaxBytesPerAttempt {
		return nil, errs.Invalidf("logs.maxBytesPerAttempt", "must be 1..%d, got %d", HardMaxBytesPerAttempt, cfg.MaxBytesPerAttempt)
	}
	if cfg.RetainAge == 0 {
		cfg.RetainAge = DefaultRetainAge
	}
	if cfg.PressureRetainAge == 0 {
		cfg.PressureRetainAge = DefaultPressureRetainAge
	}
	if cfg.RetainAge < 0 || cfg.PressureRetainAge < 0 {
		return nil, errs.Invalidf("logs.retainAge", "must not be negative")
	}
	if cfg.RetainTotalBytes == 0 {
		cfg.RetainTotalBytes = DefaultRetainTotalBytes
	}
	if cfg.RetainTotalBytes < 0 {
		return nil, errs.Invalidf("logs.retainTotalBytes", "must not be negative, got %d", cfg.RetainTotalBytes)
	}
	if cfg.PressureFreeFraction == 0 {
		cfg.PressureFreeFraction = DefaultPressureFreeFraction
	}
	if cfg.PressureFreeFraction > 1 {
		return nil, errs.Invalidf("logs.pressureFreeFraction", "must be at most 1, got %g", cfg.PressureFreeFraction)
	}
	if cfg.FreeSpace == nil {
		cfg.FreeSpace = statfsFree
	}
	if err := os.MkdirAll(cfg.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("logstore: create %s: %w", cfg.Dir, err)
	}
	return &Store{cfg: cfg, active: make(map[key]*activeLog)}, nil
}

// MaxBytesPerAttempt is the configured cap.
func (s *Store) MaxBytesPerAttempt() int64 { return s.cfg.MaxBytesPerAttempt }

// Path returns the log file path of an attempt (for diagnostics and tests).
func (s *Store) Path(runID string, attempt int) (string, error) {
	if err := validateKey(runID, attempt); err != nil {
		return "", err
	}
	return s.logPath(key{runID, attempt}), nil
}

func (s *Store) runDir(runID string) string { return filepath.Join(s.cfg.Dir, runID) }

func (s *Store) logPath(k key) string {
	return filepath.Join(s.runDir(k.runID), strconv.Itoa(k.attempt)+logSuffix)
}

// tailPath is the tail ring of a log that outgrew its head (removed when
// the log is closed; Sweep removes one a crash left behind).
func (s *Store) tailPath(k key) string {
	return filepath.Join(s.runDir(k.runID), strconv.Itoa(k.attempt)+tailSuffix)
}

func (s *Store) metaPath(k key) string {
	return filepath.Join(s.runDir(k.runID), strconv.Itoa(k.attempt)+metaSuffix)
}

// validateKey keeps run IDs to one safe path component.
func validateKey(runID string, attempt int) error {
	if len(runID) == 0 || len(runID) > 128 {
		return errs.Invalidf("runId", "must be 1..128 characters, got %d", len(runID))
	}
	if runID[0] == '.' {
		return errs.Invalidf("runId", "must not start with a dot")
	}
	for i := 0; i < len(runID); i++ {
		c := runID[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return errs.Invalidf("runId", "may contain only letters, digits, '-', '_' and '.'")
		}
	}
	if attempt < 1 || attempt > MaxAttempt {
		return errs.Invalidf("attempt", "must be 1..%d, got %d", MaxAttempt, attempt)
	}
	return nil
}

// Create starts the log of one attempt and returns its Writer. An existing
// file of the same attempt (left by an attempt that never started before a
// crash) is truncated. Only one Writer per attempt may be open.
func (s *Store) Create(runID string, attempt int) (*Writer, error) {
	if err := validateKey(runID, attempt); err != nil {
		return nil, err
	}
	k := key{runID, attempt}
	s.mu.Lock()
	if _, busy := s.active[k]; busy {
		s.mu.Unlock()
		return nil, errs.Conflictf("log of run %s attempt %d is already being written", runID, attempt)
	}
	a := &activeLog{changed: make(chan struct{})}
	s.active[k] = a
	s.mu.Unlock()

	f, err := s.openForWrite(k)
	if err != nil {
		s.mu.Lock()
		delete(s.active, k)
		s.mu.Unlock()
		return nil, err
	}
	return &Writer{s: s, k: k, f: f, limit: s.cfg.MaxBytesPerAttempt}, nil
}

func (s *Store) openForWrite(k key) (*os.File, error) {
	if err := os.MkdirAll(s.runDir(k.runID), dirMode); err != nil {
		return nil, fmt.Errorf("logstore: create run dir: %w", err)
	}
	// A stale meta from an earlier life of this attempt would describe the old
	// content; remove it before the log is rewritten.
	for _, stale := range []string{s.metaPath(k), s.tailPath(k)} {
		if err := os.Remove(stale); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("logstore: remove stale %s: %w", filepath.Base(stale), err)
		}
	}
	f, err := os.OpenFile(s.logPath(k), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return nil, fmt.Errorf("logstore: create log: %w", err)
	}
	return f, nil
}

// Writer receives the output of one attempt. Write always reports success
// so the caller keeps draining the child's pipe. The first
// executor.HeadBytes(cap) bytes go to the file as they come (followers see
// them live); later bytes go to a tail ring file next to the log that keeps
// the newest executor.TailBytes(cap) of them. Close appends the ring behind
// the head, after a marker line saying how many bytes were dropped when the
// output exceeded the cap (ADR 0042). Bytes that failed to reach the disk
// are counted and dropped, and the first disk error is reported by Close.
type Writer struct {
	s     *Store
	k     key
	f     *os.File
	limit int64

	mu        sync.Mutex
	written   int64
	seen      int64
	truncated bool
	ring      *executor.TailRing // nil until the head is full
	err       error
	closed    bool
}

// Summary describes a finished log.
type Summary struct {
	Bytes     int64 // bytes kept in the file
	BytesSeen int64 // bytes the attempt produced
	Truncated bool  // output was discarded: beyond the cap, or after a write error
}

// Write appends p to the head, the rest to the tail ring. It never fails
// and never blocks on the cap.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, os.ErrClosed
	}
	w.seen += int64(len(p))
	keep, rest := p, []byte(nil)
	if room := executor.HeadBytes(w.limit) - w.written; w.ring != nil || int64(len(keep)) > room {
		room = max(room, 0)
		keep, rest = p[:room], p[room:]
	}
	if len(keep) > 0 {
		if w.err == nil {
			n, err := w.f.Write(keep)
			w.written += int64(n)
			if err != nil {
				w.err = err
			}
		}
		if w.err != nil { // what did not reach the disk is discarded output too
			w.truncated = true
		}
	}
	if len(rest) > 0 {
		w.toTail(rest)
	}
	w.s.publish(w.k, w.written, w.seen, w.truncated)
	return len(p), nil
}

// toTail keeps p in the tail ring, opened on first use.
func (w *Writer) toTail(p []byte) {
	if w.ring == nil && w.err == nil {
		w.ring, w.err = executor.OpenTailRing(w.s.tailPath(w.k), executor.TailBytes(w.limit))
	}
	if w.ring == nil {
		w.truncated = true
		return
	}
	_, _ = w.ring.Write(p)
	if w.ring.Dropped() > 0 {
		w.truncated = true
	}
}

// Summary reports the counters so far.
func (w *Writer) Summary() Summary {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Summary{Bytes: w.written, BytesSeen: w.seen, Truncated: w.truncated}
}

// Close finishes the log: it appends the tail (and the marker), writes the
// meta record, closes the file and wakes followers, who then see the rest
// of the log and its end.
func (w *Writer) Close() (Summary, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return Summary{Bytes: w.written, BytesSeen: w.seen, Truncated: w.truncated}, nil
	}
	w.closed = true
	if w.ring != nil {
		w.appendTail()
	}
	sum := Summary{Bytes: w.written, BytesSeen: w.seen, Truncated: w.truncated}
	err := w.err
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if merr := writeMeta(w.s.metaPath(w.k), meta{Version: metaVersion, Bytes: sum.Bytes, BytesSeen: sum.BytesSeen, Truncated: sum.Truncated}); err == nil {
		err = merr
	}
	w.s.finish(w.k)
	if err != nil {
		return sum, fmt.Errorf("logstore: run %s attempt %d: %w", w.k.runID, w.k.attempt, err)
	}
	return sum, nil
}

// appendTail writes the marker (when bytes were dropped) and the ring's
// bytes behind the head, then removes the ring file.
func (w *Writer) appendTail() {
	if w.err == nil {
		if d := w.ring.Dropped(); d > 0 {
			n, err := io.WriteString(w.f, executor.DroppedMarker(d, w.written, w.ring.Kept()))
			w.written += int64(n)
			w.err = err
		}
	}
	if w.err == nil {
		n, err := w.ring.WriteTo(w.f)
		w.written += n
		w.err = err
	}
	if w.err != nil {
		w.truncated = true
	}
	if err := w.ring.Remove(); err != nil && w.err == nil {
		w.err = err
	}
	w.ring = nil
}

func (s *Store) publish(k key, size, seen int64, truncated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.active[k]
	if a == nil {
		return
	}
	grew := size != a.size || truncated != a.truncated
	a.size, a.seen, a.truncated = size, seen, truncated
	if grew {
		close(a.changed)
		a.changed = make(chan struct{})
	}
}

func (s *Store) finish(k key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.active[k]; a != nil {
		close(a.changed)
		delete(s.active, k)
	}
}

// watch returns the change channel of an active log, or nil if the log is
// not being written.
func (s *Store) watch(k key) (<-chan struct{}, *activeLog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.active[k]
	if a == nil {
		return nil, nil
	}
	snapshot := *a
	return a.changed, &snapshot
}

// IsActive reports whether the attempt's log is still being written.
func (s *Store) IsActive(runID string, attempt int) bool {
	ch, _ := s.watch(key{runID, attempt})
	return ch != nil
}
