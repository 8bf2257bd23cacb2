package executor

import (
	"bytes"
	"errors"
	"testing"
)

type failingSink struct {
	buf   bytes.Buffer
	after int // bytes accepted before failing
}

func (f *failingSink) Write(p []byte) (int, error) {
	room := f.after - f.buf.Len()
	if room >= len(p) {
		return f.buf.Write(p)
	}
	f.buf.Write(p[:max(room, 0)])
	return max(room, 0), errors.New("disk full")
}

func TestCapWriter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int64
		sinkAfter int
		writes    []string
		want      string
		sum       CaptureSummary
		wantErr   bool
	}{
		{"under the cap", 10, 100, []string{"abc", "de"}, "abcde", CaptureSummary{Bytes: 5, BytesSeen: 5}, false},
		{"exactly the cap", 5, 100, []string{"abc", "de"}, "abcde", CaptureSummary{Bytes: 5, BytesSeen: 5}, false},
		{"cut inside a write", 4, 100, []string{"abc", "def", "g"}, "abcd", CaptureSummary{Bytes: 4, BytesSeen: 7, Truncated: true}, false},
		{"zero cap", 0, 100, []string{"abc"}, "", CaptureSummary{BytesSeen: 3, Truncated: true}, false},
		{"sink fails", 100, 4, []string{"abc", "def", "ghi"}, "abcd", CaptureSummary{Bytes: 4, BytesSeen: 9, Truncated: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &failingSink{after: tc.sinkAfter}
			w := NewCapWriter(sink, tc.max)
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
			}
			sum := w.Summary()
			if (sum.Err != nil) != tc.wantErr {
				t.Fatalf("summary error %v, want error %v", sum.Err, tc.wantErr)
			}
			sum.Err = nil
			if sink.buf.String() != tc.want || sum != tc.sum {
				t.Fatalf("sink %q, summary %+v; want %q, %+v", sink.buf.String(), sum, tc.want, tc.sum)
			}
		})
	}
}
