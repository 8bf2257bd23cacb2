// Package scheduler is ql3-edge's cron loop: it turns due trigger
// schedules into queued Runs, using the same pure decision function as the
// cluster (core/schedule.Decide) and a durable cursor in the store.
//
// Each round reads up to BatchSize schedules that are due or uninitialised,
// decides each, and writes the round's decisions in one group commit (ADR
// 0065), each with its own compare-and-set on the schedule's state_version
// and trigger revision; a Fire inserts the queued Run under the
// occurrence's idempotency key in that same member. Any number of
// schedulers on the same database therefore admit each occurrence at most
// once.
//
// Between rounds the loop sleeps exactly until the earliest next fire time
// (capped at MaxSleep), or until Wake is called or the store reports a
// publish; it never polls on a fixed cadence.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// Defaults and limits (DESIGN.md §8).
const (
	DefaultBatchSize = 64
	MaxBatchSize     = 256
	DefaultMaxSleep  = 60 * time.Second
	// errorBackoffMin/Max bound the pause after a failed round (the
	// database is busy or the disk is full); it doubles per failure.
	errorBackoffMin = 100 * time.Millisecond
	errorBackoffMax = 10 * time.Second
	// maxCachedTriggers bounds the compiled-trigger cache; it is cleared
	// when full (entries of deleted triggers are never looked up again).
	maxCachedTriggers = 4096
)

// Config configures a Scheduler. Store and Clock are required.
type Config struct {
	Store edge.ScheduleStore
	Clock clock.Clock
	// Changes, if set, wakes the loop (normally Store.SchedulesChanged()).
	Changes <-chan struct{}
	// BatchSize bounds the schedules handled per round (default 64, max 256).
	BatchSize int
	// MaxSleep caps one sleep (default 60 s), a safety net against a missed
	// wake-up, e.g. a schedule changed by another process.
	MaxSleep time.Duration
	// OnAdmitted is called after the commit of each newly admitted run
	// (the store also signals RunsReady). Optional; must not block.
	OnAdmitted func(runID string)
	// OnSleep is called each time the loop goes to sleep, with the time it
	// will wake at unless woken earlier. Optional; tests use it to step a
	// fake clock in lockstep with the loop.
	OnSleep func(until time.Time)
	Logger  *slog.Logger
}

// Scheduler is the cron loop. Run it with Run; call Wake after a publish.
type Scheduler struct {
	cfg  Config
	wake chan struct{}

	mu    sync.Mutex
	cache map[string]compiled

	admitted, skipped, missed, conflicts, parked, inits atomic.Int64
	maxLateMs                                           atomic.Int64
	fireLag                                             *metrics.Histogram
}

type compiled struct {
	revision    int64
	activatedMs int64
	trigger     schedule.Trigger
}

// New validates cfg and returns a Scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil || cfg.Clock == nil {
		return nil, errors.New("scheduler: Store and Clock are required")
	}
	switch {
	case cfg.BatchSize == 0:
		cfg.BatchSize = DefaultBatchSize
	case cfg.BatchSize < 0 || cfg.BatchSize > MaxBatchSize:
		return nil, errs.Invalidf("batchSize", "must be 1..%d, got %d", MaxBatchSize, cfg.BatchSize)
	}
	switch {
	case cfg.MaxSleep == 0:
		cfg.MaxSleep = DefaultMaxSleep
	case cfg.MaxSleep < 0:
		return nil, errs.Invalidf("maxSleep", "must be positive, got %s", cfg.MaxSleep)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scheduler{cfg: cfg, wake: make(chan struct{}, 1), cache: map[string]compiled{},
		fireLag: metrics.NewHistogram(FireLagBounds)}, nil
}

// Wake makes a sleeping loop run a round now (coalescing; never blocks).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stats are cumulative counters since New.
type Stats struct {
	Inits     int64 // cursors (re)initialised
	Admitted  int64 // runs created by Fire decisions
	Skipped   int64 // Skip decisions (no run)
	Missed    int64 // occurrences that will never run (skipped or passed over)
	Conflicts int64 // decisions that lost their compare-and-set (another writer, a publish)
	Parked    int64 // schedules deactivated because they could not be decided
	MaxLateMs int64 // largest lateness of an admitted occurrence (fire lag)
}

// Stats returns the counters.
func (s *Scheduler) Stats() Stats {
	return Stats{
		Inits: s.inits.Load(), Admitted: s.admitted.Load(), Skipped: s.skipped.Load(),
		Missed: s.missed.Load(), Conflicts: s.conflicts.Load(), Parked: s.parked.Load(),
		MaxLateMs: s.maxLateMs.Load(),
	}
}

// FireLagBounds are the fire-lag histogram's buckets in seconds: the
// coordinator's millisecond buckets (5 ms … 30 s) so both binaries' series
// compare.
var FireLagBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// FireLag is the distribution of admitted occurrences' lateness (admission
// time − scheduled time), in seconds.
func (s *Scheduler) FireLag() *metrics.Histogram { return s.fireLag }

// Round reports one round.
type Round struct {
	Read      int  // schedules read
	Admitted  int  // new runs
	Conflicts int  // lost compare-and-sets
	Full      bool // the batch was full: more may be due, run again without sleeping
}

// Run loops until ctx ends; it returns ctx.Err().
func (s *Scheduler) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		round, err := s.RunRound(ctx)
		var until time.Time
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			backoff = min(max(2*backoff, errorBackoffMin), errorBackoffMax)
			until = s.cfg.Clock.Now().Add(backoff)
			s.cfg.Logger.Error("scheduler round failed", "err", err, "retryIn", backoff)
		case round.Full:
			backoff = 0
			continue // bounded work per round, but no sleep while work is due
		default:
			backoff = 0
			if until, err = s.nextWake(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				backoff = errorBackoffMin
				until = s.cfg.Clock.Now().Add(backoff)
				s.cfg.Logger.Error("scheduler: reading the next fire time failed", "err", err)
			}
		}
		if err := s.sleepUntil(ctx, until); err != nil {
			return err
		}
	}
}

// nextWake is when the earliest schedule is due, at most MaxSleep ahead.
func (s *Scheduler) nextWake(ctx context.Context) (time.Time, error) {
	now := s.cfg.Clock.Now()
	latest := now.Add(s.cfg.MaxSleep)
	next, ok, err := s.cfg.Store.NextFireAtMs(ctx, now.UnixMilli())
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		return latest, nil
	}
	if at := time.UnixMilli(next); at.Before(latest) {
		return at, nil
	}
	return latest, nil
}

// sleepUntil waits for until (an absolute time: the duration is taken at
// the moment the timer is armed), a Wake, a store change or ctx.
func (s *Scheduler) sleepUntil(ctx context.Context, until time.Time) error {
	t := s.cfg.Clock.NewTimer(until.Sub(s.cfg.Clock.Now()))
	defer t.Stop()
	if s.cfg.OnSleep != nil {
		s.cfg.OnSleep(until)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
	case <-s.wake:
	case <-s.cfg.Changes:
	}
	return nil
}

// RunRound handles up to BatchSize due schedules once. Run calls it; tests
// and benchmarks may call it directly instead of running the loop.
//
// The round decides every schedule first (pure, at the round's observation
// time) and then writes all its decisions together with ApplyDecisions:
// one group commit instead of a transaction per decision (ADR 0065). Each
// decision keeps its own compare-and-set and idempotency key, so a lost
// compare-and-set or a failing member costs only that member; the round
// reports the first other error after it has accounted for the rest.
func (s *Scheduler) RunRound(ctx context.Context) (Round, error) {
	items, err := s.cfg.Store.DueSchedules(ctx, s.cfg.Clock.Now().UnixMilli(), s.cfg.BatchSize)
	if err != nil {
		return Round{}, err
	}
	round := Round{Read: len(items), Full: len(items) == s.cfg.BatchSize}
	nowMs := s.cfg.Clock.Now().UnixMilli()
	batch := make([]edge.Decided, 0, len(items))
	for _, item := range items {
		d, ok, err := s.decide(ctx, item, nowMs)
		if err != nil {
			if errs.Code(err) != errs.Conflict {
				return round, err
			}
			round.Conflicts++
			s.conflicts.Add(1)
		}
		if ok {
			batch = append(batch, edge.Decided{Item: item, Decision: d})
		}
	}
	if len(batch) == 0 {
		return round, nil
	}
	var first error
	for i, res := range s.cfg.Store.ApplyDecisions(ctx, batch, nowMs) {
		switch {
		case errs.Code(res.Err) == errs.Conflict:
			round.Conflicts++
			s.conflicts.Add(1)
		case res.Err != nil:
			if first == nil {
				first = res.Err
			}
		case s.applied(batch[i], res.Admission):
			round.Admitted++
		}
	}
	return round, first
}

// decide decides one schedule at nowMs. ok is false when there is nothing
// to write (Wait) or the schedule was parked because it cannot be decided.
func (s *Scheduler) decide(ctx context.Context, item edge.ScheduleItem, nowMs int64) (schedule.Decision, bool, error) {
	trig, err := s.compile(item.Trigger)
	var d schedule.Decision
	if err == nil {
		d, err = schedule.Decide(trig, edge.ScheduleState(item.Schedule), nowMs)
	}
	if err != nil {
		// The expression or zone no longer compiles (tzdata changed) or it
		// never fires again: park it visibly instead of re-reading it every
		// round.
		reason := fmt.Sprintf("cannot schedule: %v", err)
		s.cfg.Logger.Warn("scheduler: parking schedule", "trigger", item.Trigger.ID, "err", err)
		if perr := s.cfg.Store.ParkSchedule(ctx, item, reason, nowMs); perr != nil {
			return d, false, perr
		}
		s.parked.Add(1)
		return d, false, nil
	}
	return d, d.Kind != schedule.Wait, nil
}

// applied accounts for one committed decision; it reports whether a new
// run was admitted.
func (s *Scheduler) applied(b edge.Decided, adm edge.Admission) bool {
	item, d := b.Item, b.Decision
	s.missed.Add(d.Missed)
	switch d.Kind {
	case schedule.Init:
		s.inits.Add(1)
	case schedule.Skip:
		s.skipped.Add(1)
		s.cfg.Logger.Info("scheduler: missed occurrence skipped", "trigger", item.Trigger.ID,
			"scheduledFor", d.ScheduledForMs, "lateMs", d.LateMs, "missed", d.Missed)
	case schedule.Fire:
		if !adm.Created {
			return false
		}
		s.admitted.Add(1)
		s.fireLag.Observe(float64(d.LateMs) / 1000)
		s.cfg.Logger.Info("run queued", "run", adm.RunID, "trigger", item.Trigger.ID,
			"scheduledFor", d.ScheduledForMs, "lateMs", d.LateMs)
		for {
			cur := s.maxLateMs.Load()
			if d.LateMs <= cur || s.maxLateMs.CompareAndSwap(cur, d.LateMs) {
				break
			}
		}
		if s.cfg.OnAdmitted != nil {
			s.cfg.OnAdmitted(adm.RunID)
		}
		return true
	}
	return false
}

// compile returns the decision input for a trigger revision, cached.
func (s *Scheduler) compile(t edge.Trigger) (schedule.Trigger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cache[t.ID]; ok && c.revision == t.Revision && c.activatedMs == t.UpdatedAtMs {
		return c.trigger, nil
	}
	st, err := edge.CompileTrigger(t)
	if err != nil {
		return schedule.Trigger{}, err
	}
	if len(s.cache) >= maxCachedTriggers {
		clear(s.cache)
	}
	s.cache[t.ID] = compiled{revision: t.Revision, activatedMs: t.UpdatedAtMs, trigger: st}
	return st, nil
}
