package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// SweepResult reports what one Sweep did.
type SweepResult struct {
	Pressure       bool          // the file system was short of space
	RetainAge      time.Duration // the age limit applied
	RemovedLogs    int
	FreedBytes     int64
	RemainingLogs  int
	RemainingBytes int64
}

type logFile struct {
	k     key
	size  int64 // log + meta
	mtime time.Time
}

// Sweep applies retention as of now: first by age, then oldest-first until
// the total size fits the budget. Logs with an open Writer are skipped.
func (s *Store) Sweep(now time.Time) (SweepResult, error) {
	res := SweepResult{RetainAge: s.cfg.RetainAge}
	if s.cfg.PressureFreeFraction > 0 {
		free, total, err := s.cfg.FreeSpace(s.cfg.Dir)
		if err == nil && total > 0 && float64(free) < s.cfg.PressureFreeFraction*float64(total) {
			res.Pressure = true
			res.RetainAge = min(s.cfg.RetainAge, s.cfg.PressureRetainAge)
		}
	}
	files, err := s.scan()
	if err != nil {
		return res, err
	}
	cutoff := now.Add(-res.RetainAge)
	var total int64
	kept := files[:0]
	for _, lf := range files {
		if lf.mtime.Before(cutoff) {
			if s.removeIfIdle(lf.k) {
				res.RemovedLogs++
				res.FreedBytes += lf.size
				continue
			}
		}
		kept = append(kept, lf)
		total += lf.size
	}
	sort.Slice(kept, func(i, j int) bool {
		if !kept[i].mtime.Equal(kept[j].mtime) {
			return kept[i].mtime.Before(kept[j].mtime)
		}
		if kept[i].k.runID != kept[j].k.runID {
			return kept[i].k.runID < kept[j].k.runID
		}
		return kept[i].k.attempt < kept[j].k.attempt
	})
	remaining := kept[:0]
	for _, lf := range kept {
		if total > s.cfg.RetainTotalBytes && s.removeIfIdle(lf.k) {
			res.RemovedLogs++
			res.FreedBytes += lf.size
			total -= lf.size
			continue
		}
		remaining = append(remaining, lf)
	}
	res.RemainingLogs = len(remaining)
	res.RemainingBytes = total
	s.removeEmptyRunDirs()
	return res, nil
}

// scan lists every log file with its size (including the meta) and mtime.
func (s *Store) scan() ([]logFile, error) {
	runs, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: list %s: %w", s.cfg.Dir, err)
	}
	var out []logFile
	for _, run := range runs {
		if !run.IsDir() || validateKey(run.Name(), 1) != nil {
			continue
		}
		entries, err := os.ReadDir(s.runDir(run.Name()))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("logstore: list run %s: %w", run.Name(), err)
		}
		for _, e := range entries {
			attempt, ok := parseLogName(e.Name())
			if !ok {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed under us
			}
			lf := logFile{k: key{run.Name(), attempt}, size: info.Size(), mtime: info.ModTime()}
			for _, side := range []string{s.metaPath(lf.k), s.tailPath(lf.k)} {
				if mi, err := os.Stat(side); err == nil {
					lf.size += mi.Size()
				}
			}
			out = append(out, lf)
		}
	}
	return out, nil
}

// parseLogName accepts "<attempt>.log" with a canonical decimal attempt.
func parseLogName(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, logSuffix)
	if !ok || digits == "" || digits[0] == '0' || len(digits) > 7 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || n > MaxAttempt || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// removeIfIdle deletes a log and its meta unless a Writer owns it. The
// check and the removal happen under the store lock so Create cannot slip
// in between.
func (s *Store) removeIfIdle(k key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active[k] != nil {
		return false
	}
	if err := os.Remove(s.logPath(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err := os.Remove(s.metaPath(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err := os.Remove(s.tailPath(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false // a tail ring a crash left behind
	}
	return true
}

func (s *Store) removeEmptyRunDirs() {
	runs, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	busy := make(map[string]bool, len(s.active))
	for k := range s.active {
		busy[k.runID] = true
	}
	for _, run := range runs {
		if run.IsDir() && !busy[run.Name()] && validateKey(run.Name(), 1) == nil {
			_ = os.Remove(s.runDir(run.Name())) // fails harmlessly unless empty
		}
	}
}

// RemoveRun deletes every log of a run (used when a run or its task is
// deleted). It refuses while an attempt of the run is still writing.
func (s *Store) RemoveRun(runID string) error {
	if err := validateKey(runID, 1); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.active {
		if k.runID == runID {
			return errs.Conflictf("run %s still has an attempt writing its log", runID)
		}
	}
	if err := os.RemoveAll(s.runDir(runID)); err != nil {
		return fmt.Errorf("logstore: remove run %s: %w", runID, err)
	}
	return nil
}
