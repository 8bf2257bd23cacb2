package executor

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailRingKeepsTheNewestBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int64
		writes []string
		want   string
	}{
		{"empty", 4, nil, ""},
		{"under", 8, []string{"abc", "de"}, "abcde"},
		{"exact", 5, []string{"abc", "de"}, "abcde"},
		{"wraps", 4, []string{"abc", "def"}, "cdef"},
		{"wraps twice", 3, []string{"ab", "cd", "ef", "g"}, "efg"},
		{"one large write", 4, []string{"0123456789"}, "6789"},
		{"large after small", 4, []string{"xy", "0123456789"}, "6789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenTailRing(filepath.Join(t.TempDir(), "ring"), tc.size)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Remove()
			all := ""
			for _, w := range tc.writes {
				if n, err := r.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				all += w
			}
			var out bytes.Buffer
			if _, err := r.WriteTo(&out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("ring = %q, want %q", out.String(), tc.want)
			}
			if r.Total() != int64(len(all)) || r.Dropped() != int64(len(all)-len(tc.want)) {
				t.Fatalf("total %d dropped %d", r.Total(), r.Dropped())
			}
		})
	}
}

func TestSplitCapAndMarker(t *testing.T) {
	if h, tl := HeadBytes(4<<20), TailBytes(4<<20); h != 3<<20-MaxMarkerBytes || tl != 1<<20 {
		t.Fatalf("split of 4 MiB = %d + %d", h, tl)
	}
	// From 4 KiB on, head + the longest marker + tail fit in the cap.
	for _, c := range []int64{4096, 4097, 1 << 20, 64 << 20, 1 << 30} {
		worst := DroppedMarker(1<<62, HeadBytes(c), TailBytes(c))
		if HeadBytes(c)+int64(len(worst))+TailBytes(c) > c || len(worst) > MaxMarkerBytes {
			t.Errorf("cap %d: head %d + marker %d + tail %d", c, HeadBytes(c), len(worst), TailBytes(c))
		}
	}
	m := DroppedMarker(96, 3, 1)
	if !strings.HasPrefix(m, "\n[ql3: 96 bytes of output dropped here") || !strings.HasSuffix(m, "]\n") || strings.Count(m, "\n") != 2 {
		t.Fatalf("marker %q", m)
	}
}
