package notifykit

import (
	"sync"

	"github.com/ql3/ql3/core/errs"
)

// Script limits: sendNotify calls per Run per window.
const (
	ScriptCallsPerWindow = 20
	ScriptWindowMs       = 60_000
	maxRateEntries       = 4096
)

// ScriptCalls counts sendNotify calls per Run (the rate limit and each
// call's sequence number, part of its idempotency key). The zero value is
// ready; it is safe for concurrent use.
type ScriptCalls struct {
	mu   sync.Mutex
	runs map[string]*scriptRun
}

type scriptRun struct {
	windowStart int64
	calls       int
	seq         int64
}

// Charge charges one call of runID at now and returns its sequence number,
// or an errs.Unavailable naming the limit.
func (s *ScriptCalls) Charge(runID string, now int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[string]*scriptRun{}
	}
	r := s.runs[runID]
	if r == nil {
		if len(s.runs) >= maxRateEntries {
			for id, o := range s.runs { // forget windows that are over
				if now-o.windowStart >= ScriptWindowMs {
					delete(s.runs, id)
				}
			}
			if len(s.runs) >= maxRateEntries {
				return 0, errs.E(errs.Unavailable, "", "too many scripts are sending notifications; try again in a minute")
			}
		}
		r = &scriptRun{windowStart: now}
		s.runs[runID] = r
	}
	if now-r.windowStart >= ScriptWindowMs || now < r.windowStart {
		r.windowStart, r.calls = now, 0
	}
	if r.calls >= ScriptCallsPerWindow {
		return 0, errs.E(errs.Unavailable, "", "rate limited: this run sent %d notifications within a minute; the limit is %d", r.calls, ScriptCallsPerWindow)
	}
	r.calls++
	r.seq++
	return r.seq, nil
}
