package logstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/worker/executor"
)

func openTest(t *testing.T, cfg Config) *Store {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "logs")
	}
	if cfg.FreeSpace == nil {
		cfg.FreeSpace = func(string) (uint64, uint64, error) { return 90, 100, nil }
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestOpenValidates(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no dir", Config{}, "logs.dir"},
		{"cap too big", Config{Dir: "x", MaxBytesPerAttempt: HardMaxBytesPerAttempt + 1}, "logs.maxBytesPerAttempt"},
		{"cap negative", Config{Dir: "x", MaxBytesPerAttempt: -1}, "logs.maxBytesPerAttempt"},
		{"negative age", Config{Dir: "x", RetainAge: -time.Second}, "logs.retainAge"},
		{"negative total", Config{Dir: "x", RetainTotalBytes: -1}, "logs.retainTotalBytes"},
		{"fraction", Config{Dir: "x", PressureFreeFraction: 2}, "logs.pressureFreeFraction"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Dir != "" {
				tc.cfg.Dir = filepath.Join(t.TempDir(), tc.cfg.Dir)
			}
			_, err := Open(tc.cfg)
			if errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field {
				t.Fatalf("err = %v (field %q), want invalid %q", err, errs.Field(err), tc.field)
			}
		})
	}
}

func TestPermissionsAndLayout(t *testing.T) {
	s := openTest(t, Config{})
	w, err := s.Create("run-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path, err := s.Path("run-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.cfg.Dir, "run-1", "2.log"); path != want {
		t.Fatalf("path = %s, want %s", path, want)
	}
	for p, mode := range map[string]os.FileMode{
		s.cfg.Dir:          0o700,
		filepath.Dir(path): 0o700,
		path:               0o600,
		filepath.Join(filepath.Dir(path), "2.meta"): 0o600,
	} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != mode {
			t.Errorf("%s mode = %o, want %o", p, got, mode)
		}
	}
}

func TestKeyValidation(t *testing.T) {
	s := openTest(t, Config{})
	for _, tc := range []struct {
		run     string
		attempt int
		field   string
	}{
		{"", 1, "runId"},
		{"../x", 1, "runId"},
		{".hidden", 1, "runId"},
		{"a/b", 1, "runId"},
		{strings.Repeat("a", 129), 1, "runId"},
		{"ok", 0, "attempt"},
		{"ok", MaxAttempt + 1, "attempt"},
	} {
		_, err := s.Create(tc.run, tc.attempt)
		if errs.Field(err) != tc.field {
			t.Errorf("Create(%q,%d) err = %v, want field %s", tc.run, tc.attempt, err, tc.field)
		}
	}
}

func TestCapTruncatesAndRecords(t *testing.T) {
	s := openTest(t, Config{MaxBytesPerAttempt: 10})
	w, err := s.Create("r", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []string{"0123", "4567", "89abc", "defgh"} {
		n, err := w.Write([]byte(chunk))
		if err != nil || n != len(chunk) {
			t.Fatalf("Write(%q) = %d, %v; want full length, nil", chunk, n, err)
		}
	}
	sum, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Cap 10: the first 8 bytes, a marker for the 8 dropped, the last 2.
	kept := "01234567" + executor.DroppedMarker(8, 8, 2) + "gh"
	want := Summary{Bytes: int64(len(kept)), BytesSeen: 18, Truncated: true}
	if sum != want {
		t.Fatalf("summary = %+v, want %+v", sum, want)
	}
	c, err := s.Read("r", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Data) != kept || !c.Truncated || c.BytesSeen != 18 || !c.EOF || !c.Complete {
		t.Fatalf("chunk = %+v (%q)", c, c.Data)
	}
	if _, err := os.Stat(s.tailPath(key{"r", 1})); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tail ring left behind: %v", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

func TestReadRanges(t *testing.T) {
	s := openTest(t, Config{})
	w, err := s.Create("r", 1)
	if err != nil {
		t.Fatal(err)
	}
	content := "hello world, this is a log\n"
	w.Write([]byte(content))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		offset, limit int64
		want          string
		eof           bool
		code          string
	}{
		{"whole", 0, 0, content, true, ""},
		{"prefix", 0, 5, "hello", false, ""},
		{"middle", 6, 5, "world", false, ""},
		{"tail", 23, 100, "log\n", true, ""},
		{"at end", int64(len(content)), 10, "", true, ""},
		{"past end", int64(len(content)) + 1, 10, "", false, errs.Invalid},
		{"negative offset", -1, 10, "", false, errs.Invalid},
		{"negative limit", 0, -1, "", false, errs.Invalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.Read("r", 1, tc.offset, tc.limit)
			if tc.code != "" {
				if errs.Code(err) != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.Data) != tc.want || c.EOF != tc.eof || c.NextOffset != tc.offset+int64(len(tc.want)) {
				t.Fatalf("chunk = %+v, want data %q eof %v", c, tc.want, tc.eof)
			}
		})
	}
	if _, err := s.Read("missing", 1, 0, 0); errs.Code(err) != errs.NotFound {
		t.Fatalf("missing log: %v", err)
	}
}

func TestReadClampsToMaxReadBytes(t *testing.T) {
	s := openTest(t, Config{})
	w, _ := s.Create("r", 1)
	w.Write(bytes.Repeat([]byte("x"), int(MaxReadBytes)+100))
	w.Close()
	c, err := s.Read("r", 1, 0, 10*MaxReadBytes)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(c.Data)) != MaxReadBytes || c.EOF {
		t.Fatalf("read %d bytes eof=%v, want %d and not EOF", len(c.Data), c.EOF, MaxReadBytes)
	}
	c, err = s.Read("r", 1, c.NextOffset, 0)
	if err != nil || len(c.Data) != 100 || !c.EOF {
		t.Fatalf("second read: %d bytes eof=%v err=%v", len(c.Data), c.EOF, err)
	}
}

func TestFollowWaitsForBytesAndEOF(t *testing.T) {
	s := openTest(t, Config{})
	w, err := s.Create("r", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type result struct {
		c   Chunk
		err error
	}
	results := make(chan result)
	follow := func(off int64) {
		c, err := s.Follow(ctx, "r", 1, off, 0)
		results <- result{c, err}
	}

	// Nothing written yet: Follow blocks until the first write.
	go follow(0)
	w.Write([]byte("line1\n"))
	r := <-results
	if r.err != nil || string(r.c.Data) != "line1\n" || r.c.Complete {
		t.Fatalf("first follow = %+v, %v", r.c, r.err)
	}
	// At the end of a live log: blocks until more arrives.
	go follow(r.c.NextOffset)
	w.Write([]byte("line2\n"))
	r = <-results
	if r.err != nil || string(r.c.Data) != "line2\n" {
		t.Fatalf("second follow = %+v, %v", r.c, r.err)
	}
	// At the end: Close ends the follow with EOF.
	go follow(r.c.NextOffset)
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r = <-results
	if r.err != nil || len(r.c.Data) != 0 || !r.c.EOF {
		t.Fatalf("final follow = %+v, %v", r.c, r.err)
	}
}

func TestFollowContextCancel(t *testing.T) {
	s := openTest(t, Config{})
	w, _ := s.Create("r", 1)
	defer w.Close()
	w.Write([]byte("abc"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Follow(ctx, "r", 1, 3, 0)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestFollowConcurrentWriter reads a log while it is written in many small
// pieces and checks the reader reassembles exactly what was written.
func TestFollowConcurrentWriter(t *testing.T) {
	s := openTest(t, Config{})
	w, _ := s.Create("r", 1)
	var want bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 500; i++ {
			line := []byte(strings.Repeat("x", i%37) + "\n")
			want.Write(line)
			w.Write(line)
		}
		w.Close()
	}()
	var got bytes.Buffer
	var off int64
	for {
		c, err := s.Follow(context.Background(), "r", 1, off, 64)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(c.Data)
		off = c.NextOffset
		if c.EOF {
			break
		}
	}
	wg.Wait()
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("followed %d bytes, want %d", got.Len(), want.Len())
	}
}

func TestCreateTwiceConflicts(t *testing.T) {
	s := openTest(t, Config{})
	w, _ := s.Create("r", 1)
	if _, err := s.Create("r", 1); errs.Code(err) != errs.Conflict {
		t.Fatalf("second Create: %v", err)
	}
	w.Close()
	// After close, a re-create (an attempt that never started before a
	// crash) truncates and drops the stale meta.
	w2, err := s.Create("r", 1)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Read("r", 1, 0, 0)
	if len(c.Data) != 0 || c.Complete {
		t.Fatalf("recreated log = %+v", c)
	}
	w2.Close()
}

func TestMissingOrTornMetaFallsBack(t *testing.T) {
	s := openTest(t, Config{MaxBytesPerAttempt: 4})
	w, _ := s.Create("r", 1)
	w.Write([]byte("abcdefgh"))
	w.Close()
	if err := os.WriteFile(s.metaPath(key{"r", 1}), []byte(`{"v":1,"bytes":`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := s.Read("r", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if kept := "abc" + executor.DroppedMarker(4, 3, 1) + "h"; c.Truncated || c.BytesSeen != int64(len(kept)) || string(c.Data) != kept {
		t.Fatalf("chunk with torn meta = %+v", c)
	}
}

func TestInfo(t *testing.T) {
	s := openTest(t, Config{MaxBytesPerAttempt: 4})
	if _, err := s.Info("r", 1); errs.Code(err) != errs.NotFound {
		t.Fatalf("Info of a missing log: %v", err)
	}
	w, _ := s.Create("r", 1)
	w.Write([]byte("abcdef"))
	live, err := s.Info("r", 1)
	// Cap 4: the head (3 bytes) is in the file; the tail waits in its ring.
	if err != nil || live.Size != 3 || live.Complete || !live.Truncated || live.BytesSeen != 6 || len(live.Data) != 0 {
		t.Fatalf("Info while writing = %+v, %v", live, err)
	}
	w.Close()
	done, err := s.Info("r", 1)
	size := int64(len("abc" + executor.DroppedMarker(2, 3, 1) + "f"))
	if err != nil || done.Size != size || !done.Complete || !done.EOF || !done.Truncated || done.BytesSeen != 6 {
		t.Fatalf("Info after close = %+v, %v", done, err)
	}
}

func TestRemoveRun(t *testing.T) {
	s := openTest(t, Config{})
	w, _ := s.Create("r", 1)
	if err := s.RemoveRun("r"); errs.Code(err) != errs.Conflict {
		t.Fatalf("RemoveRun while writing: %v", err)
	}
	w.Close()
	if err := s.RemoveRun("r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read("r", 1, 0, 0); errs.Code(err) != errs.NotFound {
		t.Fatalf("read after RemoveRun: %v", err)
	}
}

func TestDecodeMeta(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"bytes":10,"bytesSeen":18,"truncated":true,"v":1}`, true},
		{`{"bytes":0,"bytesSeen":0,"truncated":false,"v":1}`, true},
		{`{"bytes":10,"bytesSeen":18,"truncated":false,"v":1}`, false},
		{`{"bytes":10,"bytesSeen":5,"truncated":false,"v":1}`, false},
		{`{"bytes":110,"bytesSeen":18,"truncated":true,"v":1}`, true},  // head + marker + tail
		{`{"bytes":300,"bytesSeen":18,"truncated":true,"v":1}`, false}, // more than a marker over what was seen
		{`{"bytes":-1,"bytesSeen":0,"truncated":false,"v":1}`, false},
		{`{"bytes":1,"bytesSeen":1,"truncated":false,"v":2}`, false},
		{`{"bytes":1,"bytesSeen":1,"truncated":false,"v":1,"x":1}`, false},
		{`{"bytes":1,"bytes":1,"bytesSeen":1,"truncated":false,"v":1}`, false},
		{``, false},
	}
	for _, tc := range tests {
		m, err := decodeMeta([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("decodeMeta(%s) = %+v, %v; want ok=%v", tc.in, m, err, tc.ok)
		}
		if err == nil {
			again, _ := encodeMeta(m)
			if string(again) != tc.in {
				t.Errorf("round trip %s → %s", tc.in, again)
			}
		}
	}
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add([]byte(`{"bytes":10,"bytesSeen":18,"truncated":true,"v":1}`))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"bytes":1e3,"bytesSeen":1000,"truncated":false,"v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMeta(data)
		if err != nil {
			return
		}
		if m.Bytes < 0 || m.BytesSeen < m.Bytes || (m.BytesSeen > m.Bytes && !m.Truncated) {
			t.Fatalf("accepted inconsistent meta %+v", m)
		}
		enc, err := encodeMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeMeta(enc)
		if err != nil || back != m {
			t.Fatalf("re-decode of %s: %+v, %v", enc, back, err)
		}
	})
}

func FuzzParseLogName(f *testing.F) {
	for _, s := range []string{"1.log", "12.log", "01.log", "0.log", ".log", "1.meta", "1048576.log", "1048577.log", "-1.log", "+1.log"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := parseLogName(name)
		if !ok {
			return
		}
		if n < 1 || n > MaxAttempt {
			t.Fatalf("parseLogName(%q) = %d out of range", name, n)
		}
		if name != filepath.Base(name) || name != strings.TrimSpace(name) {
			t.Fatalf("parseLogName accepted %q", name)
		}
	})
}
