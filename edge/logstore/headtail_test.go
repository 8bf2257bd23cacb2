package logstore

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ql3/ql3/worker/executor"
)

// TestFloodKeepsHeadMarkerAndTail: 100 MB through a Writer with the
// default 4 MiB cap keeps the first 3 MiB, a marker with the dropped
// count, and the last 1 MiB; the file never holds more than that.
func TestFloodKeepsHeadMarkerAndTail(t *testing.T) {
	s := openTest(t, Config{})
	w, err := s.Create("flood", 1)
	if err != nil {
		t.Fatal(err)
	}
	const total = 100 << 20
	chunk := make([]byte, 32<<10)
	for i := range chunk {
		chunk[i] = 'm'
	}
	io.WriteString(w, "FIRST\n")
	for written := int64(6); written < total-5; {
		n := min(int64(len(chunk)), total-5-written)
		w.Write(chunk[:n])
		written += n
		if sum := w.Summary(); sum.Bytes > executor.HeadBytes(DefaultMaxBytesPerAttempt) {
			t.Fatalf("the file grew past the head while writing: %d", sum.Bytes)
		}
	}
	io.WriteString(w, "LAST\n")
	sum, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	head, tail := executor.HeadBytes(DefaultMaxBytesPerAttempt), executor.TailBytes(DefaultMaxBytesPerAttempt)
	marker := executor.DroppedMarker(total-head-tail, head, tail)
	if sum.BytesSeen != total || !sum.Truncated || sum.Bytes != head+int64(len(marker))+tail {
		t.Fatalf("summary = %+v", sum)
	}
	got := readAll(t, s, "flood", 1)
	if !strings.HasPrefix(got, "FIRST\nmmm") || !strings.HasSuffix(got, "mmmLAST\n") {
		t.Fatalf("log does not start with the first and end with the last bytes: %q … %q", got[:16], got[len(got)-16:])
	}
	if i := strings.Index(got, marker); i != int(head) {
		t.Fatalf("marker at %d, want right after the %d head bytes", i, head)
	}
}

// TestOutputBetweenHeadAndCapIsKeptWhole: nothing dropped, no marker.
func TestOutputBetweenHeadAndCapIsKeptWhole(t *testing.T) {
	s := openTest(t, Config{MaxBytesPerAttempt: 1024})
	w, _ := s.Create("r", 1)
	want := strings.Repeat("0123456789abcdef", 60) // 960 bytes: past the head, within head + tail
	for i := 0; i < len(want); i += 100 {
		io.WriteString(w, want[i:min(i+100, len(want))])
	}
	sum, err := w.Close()
	if err != nil || sum.Truncated || sum.Bytes != int64(len(want)) {
		t.Fatalf("summary = %+v, %v", sum, err)
	}
	if got := readAll(t, s, "r", 1); got != want {
		t.Fatalf("log = %q", got)
	}
}

// TestFollowSeesTheMarker: a follower waiting past the head is woken when
// the attempt ends and reads the marker and the tail.
func TestFollowSeesTheMarker(t *testing.T) {
	s := openTest(t, Config{MaxBytesPerAttempt: 1024})
	head, tail := executor.HeadBytes(1024), executor.TailBytes(1024)
	w, _ := s.Create("r", 1)
	io.WriteString(w, strings.Repeat("h", int(head)))
	c, err := s.Follow(context.Background(), "r", 1, 0, 0)
	if err != nil || int64(len(c.Data)) != head {
		t.Fatalf("first follow = %d bytes, %v", len(c.Data), err)
	}
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		for off := head; ; {
			c, err := s.Follow(context.Background(), "r", 1, off, 0)
			if err != nil {
				t.Error(err)
				break
			}
			b.Write(c.Data)
			if off = c.NextOffset; c.EOF {
				break
			}
		}
		got <- b.String()
	}()
	io.WriteString(w, strings.Repeat("x", 5000)+"END\n")
	w.Close()
	want := executor.DroppedMarker(5004-tail, head, tail) + strings.Repeat("x", int(tail)-4) + "END\n"
	if followed := <-got; followed != want {
		t.Fatalf("follow after the head = %q, want the marker and the tail", followed)
	}
}

func readAll(t *testing.T, s *Store, runID string, attempt int) string {
	t.Helper()
	var b bytes.Buffer
	for off := int64(0); ; {
		c, err := s.Read(runID, attempt, off, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(c.Data)
		off = c.NextOffset
		if c.EOF {
			return b.String()
		}
	}
}
