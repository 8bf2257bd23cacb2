package executor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Head and tail of a capped log (ADR 0042; both binaries): a log with
// a cap of max bytes keeps its first HeadBytes(max) bytes as they come and
// the last TailBytes(max) bytes in a TailRing; when the attempt ends, the
// ring is appended behind the head — after a DroppedMarker line when output
// was dropped in between. Nothing of it is held in memory.

// TailBytes is the share of a log cap kept from the end of the output: a
// quarter of the cap (1 MiB of the default 4 MiB).
func TailBytes(max int64) int64 { return max / 4 }

// HeadBytes is the share of a log cap kept from the start of the output:
// the rest after the tail and room for the marker line, so head, marker
// and tail together stay within the cap (for caps of 4 KiB and more; the
// worker's upload must fit the control plane's cap of the same size).
func HeadBytes(max int64) int64 { return max - TailBytes(max) - markerRoom(max) }

// MaxMarkerBytes bounds the length of a DroppedMarker line.
const MaxMarkerBytes = 256

func markerRoom(max int64) int64 { return min(MaxMarkerBytes, max/16) }

// DroppedMarker is the line written between the head and the tail of a log
// whose middle was dropped. It starts with a newline so it stands on its own
// line even when the head ends in the middle of one.
func DroppedMarker(dropped, head, tail int64) string {
	return fmt.Sprintf("\n[ql3: %d bytes of output dropped here; the log keeps the first %d and the last %d bytes]\n", dropped, head, tail)
}

// TailRing keeps the last Size bytes written to it in a file used as a
// ring (logical offset x lives at x mod Size), never in memory. Write
// never fails the caller: a file error is remembered and reported by
// WriteTo. Not safe for concurrent use; its owner serialises calls.
type TailRing struct {
	f     *os.File
	path  string
	size  int64
	total int64 // bytes written so far
	err   error
}

// OpenTailRing creates (or empties) the ring file at path, mode 0600.
func OpenTailRing(path string, size int64) (*TailRing, error) {
	if size <= 0 {
		return nil, fmt.Errorf("tail ring: size must be positive, got %d", size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tail ring: %w", err)
	}
	return &TailRing{f: f, path: path, size: size}, nil
}

// Write stores p as the newest bytes. It always reports len(p), nil.
func (r *TailRing) Write(p []byte) (int, error) {
	n := len(p)
	r.total += int64(n)
	if int64(len(p)) > r.size {
		p = p[int64(len(p))-r.size:] // only the newest size bytes can survive
	}
	start := r.total - int64(len(p)) // logical offset of p[0]
	for len(p) > 0 && r.err == nil {
		pos := start % r.size
		k := min(int64(len(p)), r.size-pos)
		if _, err := r.f.WriteAt(p[:k], pos); err != nil {
			r.err = err
		}
		p, start = p[k:], start+k
	}
	return n, nil
}

// Total is every byte written to the ring; Kept is how many of them it
// holds (the newest ones); Dropped is the rest.
func (r *TailRing) Total() int64   { return r.total }
func (r *TailRing) Kept() int64    { return min(r.total, r.size) }
func (r *TailRing) Dropped() int64 { return r.total - r.Kept() }

// WriteTo copies the kept bytes, oldest first, through a 32 KiB buffer.
func (r *TailRing) WriteTo(w io.Writer) (int64, error) {
	if r.err != nil {
		return 0, fmt.Errorf("tail ring: %w", r.err)
	}
	buf := make([]byte, min(32<<10, max(r.Kept(), 1)))
	var done int64
	for off := r.total - r.Kept(); off < r.total; {
		pos := off % r.size
		k := min(int64(len(buf)), r.size-pos, r.total-off)
		if _, err := r.f.ReadAt(buf[:k], pos); err != nil && !errors.Is(err, io.EOF) {
			return done, fmt.Errorf("tail ring: %w", err)
		}
		m, err := w.Write(buf[:k])
		done += int64(m)
		if err != nil {
			return done, err
		}
		off += k
	}
	return done, nil
}

// Remove closes and deletes the ring file.
func (r *TailRing) Remove() error {
	err := r.f.Close()
	if rerr := os.Remove(r.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
