package agent

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// spool is the on-disk log of one attempt: the executor appends output
// (up to max bytes; the rest is dropped and flagged), the uploader reads
// it back by offset, so no log is ever held in memory.
type spool struct {
	mu        sync.Mutex
	f         *os.File
	size      int64
	max       int64
	truncated bool
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
	return &spool{f: f, size: st.Size(), max: max, notify: notify}, nil
}

// Write appends what fits under the cap and reports success for all of p
// (the executor must never block or fail on output).
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	n := len(p)
	if room := s.max - s.size; int64(len(p)) > room {
		if room < 0 {
			room = 0
		}
		p = p[:room]
		s.truncated = true
	}
	if len(p) > 0 && s.f != nil {
		m, err := s.f.WriteAt(p, s.size)
		s.size += int64(m)
		if err != nil {
			s.truncated = true
		}
	}
	s.mu.Unlock()
	if s.notify != nil {
		s.notify()
	}
	return n, nil
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
	s.size, s.truncated = 0, false
}
