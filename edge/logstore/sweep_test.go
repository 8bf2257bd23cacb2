package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var sweepNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// writeAged writes a finished log of n bytes and sets its mtime to age
// before sweepNow.
func writeAged(t *testing.T, s *Store, runID string, attempt, n int, age time.Duration) {
	t.Helper()
	w, err := s.Create(runID, attempt)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte("x"), n))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mtime := sweepNow.Add(-age)
	for _, p := range []string{s.logPath(key{runID, attempt}), s.metaPath(key{runID, attempt})} {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(s *Store, runID string, attempt int) bool {
	_, err := os.Stat(s.logPath(key{runID, attempt}))
	return err == nil
}

func metaSize(t *testing.T, s *Store, runID string, attempt int) int64 {
	st, err := os.Stat(s.metaPath(key{runID, attempt}))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestSweepByAge(t *testing.T) {
	s := openTest(t, Config{RetainAge: 7 * 24 * time.Hour})
	writeAged(t, s, "old", 1, 100, 8*24*time.Hour)
	writeAged(t, s, "old", 2, 100, 7*24*time.Hour+time.Second)
	writeAged(t, s, "new", 1, 100, 6*24*time.Hour)
	live, err := s.Create("live", 1) // active logs are never swept
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	old := sweepNow.Add(-30 * 24 * time.Hour)
	os.Chtimes(s.logPath(key{"live", 1}), old, old)

	res, err := s.Sweep(sweepNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.RemovedLogs != 2 || res.Pressure || res.RetainAge != 7*24*time.Hour {
		t.Fatalf("result = %+v", res)
	}
	if exists(s, "old", 1) || exists(s, "old", 2) || !exists(s, "new", 1) || !exists(s, "live", 1) {
		t.Fatal("wrong files removed")
	}
	if _, err := os.Stat(filepath.Join(s.cfg.Dir, "old")); !os.IsNotExist(err) {
		t.Fatalf("empty run dir not removed: %v", err)
	}
}

func TestSweepByTotalSizeOldestFirst(t *testing.T) {
	s := openTest(t, Config{RetainTotalBytes: 2500})
	writeAged(t, s, "a", 1, 1000, 3*time.Hour)
	writeAged(t, s, "b", 1, 1000, 2*time.Hour)
	writeAged(t, s, "c", 1, 1000, 1*time.Hour)
	res, err := s.Sweep(sweepNow)
	if err != nil {
		t.Fatal(err)
	}
	if exists(s, "a", 1) || !exists(s, "b", 1) || !exists(s, "c", 1) {
		t.Fatalf("expected only the oldest removed; result %+v", res)
	}
	wantRemaining := 2000 + metaSize(t, s, "b", 1) + metaSize(t, s, "c", 1)
	if res.RemovedLogs != 1 || res.RemainingLogs != 2 || res.RemainingBytes != wantRemaining {
		t.Fatalf("result = %+v, want 1 removed, 2 remaining of %d bytes", res, wantRemaining)
	}
}

func TestSweepUnderDiskPressure(t *testing.T) {
	s := openTest(t, Config{FreeSpace: func(string) (uint64, uint64, error) { return 5, 100, nil }})
	writeAged(t, s, "a", 1, 10, 25*time.Hour)
	writeAged(t, s, "b", 1, 10, 23*time.Hour)
	res, err := s.Sweep(sweepNow)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pressure || res.RetainAge != DefaultPressureRetainAge || exists(s, "a", 1) || !exists(s, "b", 1) {
		t.Fatalf("result = %+v", res)
	}
}

func TestSweepIgnoresForeignFiles(t *testing.T) {
	s := openTest(t, Config{RetainAge: time.Hour})
	writeAged(t, s, "r", 1, 10, 2*time.Hour)
	foreign := []string{
		filepath.Join(s.cfg.Dir, "notes.txt"),
		filepath.Join(s.cfg.Dir, "r2", "readme.log"),
		filepath.Join(s.cfg.Dir, "r2", "01.log"),
	}
	for _, p := range foreign {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("keep"), 0o600)
		old := sweepNow.Add(-48 * time.Hour)
		os.Chtimes(p, old, old)
	}
	if _, err := s.Sweep(sweepNow); err != nil {
		t.Fatal(err)
	}
	for _, p := range foreign {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("foreign file %s removed: %v", p, err)
		}
	}
	if exists(s, "r", 1) {
		t.Error("old log kept")
	}
}
