package agent

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/ql3/ql3/worker/executor"
)

// spool is the on-disk log of one attempt: the executor appends output,
// the uploader reads it back by offset, so no log is ever held in memory.
// Under the cap (max bytes) everything is kept. Beyond it the spool keeps
// the head and the tail (ADR 0042): the first executor.HeadBytes(max)
// bytes go to the spool as they come (and are uploaded while the attempt
// runs); later bytes go to a tail ring file beside it that keeps the newest
// executor.TailBytes(max); seal, once the process has ended, appends a
// marker line with the dropped count and the ring. The control plane
// receives one ordinary stream and needs no change.
type spool struct {
	mu        sync.Mutex
	f         *os.File
	path      string
	size      int64
	max       int64
	truncated bool
	ring      *executor.TailRing // nil until the head is full
	ringErr   bool
	notify    func()
}

// openSpool opens (creating 0600) the spool at path for appending; an
// existing spool (after a restart) keeps its bytes.
func openSpool(path string, max int64, notify func()) (*spool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &spool{f: f, path: path, size: st.Size(), max: max, notify: notify}, nil
}

// Write appends what fits in the head, keeps the rest in the tail ring, and
// reports success for all of p (the executor must never block or fail on
// output).
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	n := len(p)
	var rest []byte
	if room := executor.HeadBytes(s.max) - s.size; s.ring != nil || s.ringErr || int64(len(p)) > room {
		room = max(room, 0)
		p, rest = p[:room], p[room:]
	}
	if len(p) > 0 && s.f != nil {
		m, err := s.f.WriteAt(p, s.size)
		s.size += int64(m)
		if err != nil {
			s.truncated = true
		}
	}
	if len(rest) > 0 {
		s.toTail(rest)
	}
	s.mu.Unlock()
	if s.notify != nil {
		s.notify()
	}
	return n, nil
}

// toTail keeps p in the tail ring, opened on first use.
func (s *spool) toTail(p []byte) {
	if s.ring == nil && !s.ringErr && s.f != nil {
		r, err := executor.OpenTailRing(s.path+tailSuffix, executor.TailBytes(s.max))
		s.ring, s.ringErr = r, err != nil
	}
	if s.ring == nil {
		s.truncated = true
		return
	}
	_, _ = s.ring.Write(p)
	if s.ring.Dropped() > 0 {
		s.truncated = true
	}
}

// tailSuffix names the tail ring beside a spool file.
const tailSuffix = ".tail"

// seal appends the tail ring (after the marker line when bytes were
// dropped) to the spool and removes the ring. Call it once the process has
// ended and its output is drained; later calls do nothing.
func (s *spool) seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil || s.f == nil {
		return
	}
	w := &spoolAppender{s: s}
	if d := s.ring.Dropped(); d > 0 {
		_, _ = io.WriteString(w, executor.DroppedMarker(d, s.size, s.ring.Kept()))
	}
	if w.err == nil {
		_, _ = s.ring.WriteTo(w)
	}
	if w.err != nil {
		s.truncated = true
	}
	_ = s.ring.Remove()
	s.ring = nil
}

// spoolAppender writes at the end of the spool (its mutex held).
type spoolAppender struct {
	s   *spool
	err error
}

func (a *spoolAppender) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	n, err := a.s.f.WriteAt(p, a.s.size)
	a.s.size += int64(n)
	a.err = err
	return n, err
}

// state returns the spooled length and whether output was dropped.
func (s *spool) state() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size, s.truncated
}

// readAt reads up to len(buf) bytes at off.
func (s *spool) readAt(buf []byte, off int64) (int, error) {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f == nil {
		return 0, errors.New("spool closed")
	}
	n, err := f.ReadAt(buf, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropRing()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// truncate empties the spool (a fresh launch never inherits bytes).
func (s *spool) truncate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = s.f.Truncate(0)
	}
	s.dropRing()
	s.size, s.truncated, s.ringErr = 0, false, false
}

// dropRing removes the tail ring, also one a crash left behind (s.mu held).
func (s *spool) dropRing() {
	if s.ring != nil {
		_ = s.ring.Remove()
		s.ring = nil
	} else if s.path != "" {
		_ = os.Remove(s.path + tailSuffix)
	}
}
