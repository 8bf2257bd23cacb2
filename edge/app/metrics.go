package app

import (
	"context"

	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/core/run"
)

// runStatuses are every Run status, so a scrape always carries each series
// (a status with no Run reads 0 rather than vanishing).
var runStatuses = []run.RunStatus{run.RunCreated, run.RunQueued, run.RunDispatching, run.RunRunning,
	run.RunRetryWait, run.RunLost, run.RunSucceeded, run.RunFailed, run.RunCancelled, run.RunTimedOut}

// collectMetrics writes the scheduler's, the runner's and the store's
// families into a /metrics scrape (the HTTP families are httpapi's).
func (m *Main) collectMetrics(ctx context.Context, w *metrics.Writer) error {
	g, err := m.store.RunGauges(ctx)
	if err != nil {
		return err
	}
	st := m.engine.sched.Stats()
	w.Counter("ql3_scheduler_admitted_total", "Runs admitted by the scheduler", nil, float64(st.Admitted))
	w.Counter("ql3_scheduler_skipped_total", "missed occurrences skipped (no Run)", nil, float64(st.Skipped))
	w.Counter("ql3_scheduler_missed_occurrences_total", "occurrences that will never run", nil, float64(st.Missed))
	w.Counter("ql3_scheduler_initialized_total", "schedule cursors (re)initialised", nil, float64(st.Inits))
	// The edge has one scheduler and no claims: a lost compare-and-set is
	// the edge's claim race (a publish moved the cursor under a decision).
	w.Counter("ql3_scheduler_admissions_refused_total", "admissions refused: raced (the schedule cursor moved under the decision)",
		[]metrics.Label{{Name: "reason", Value: "raced"}}, float64(st.Conflicts))
	w.Counter("ql3_scheduler_parked_total", "schedules deactivated because they could not be decided", nil, float64(st.Parked))
	m.engine.sched.FireLag().Write(w, "ql3_scheduler_fire_lag_seconds", "lateness of admitted occurrences: admission − scheduled time", nil)

	w.Family("ql3_runs", "gauge", "Runs kept in each status (finished Runs until retention removes them)")
	for _, s := range runStatuses {
		w.Sample("ql3_runs", []metrics.Label{{Name: "status", Value: string(s)}}, float64(g.ByStatus[string(s)]))
	}
	queued := g.ByStatus[string(run.RunQueued)] + g.ByStatus[string(run.RunRetryWait)]
	w.Gauge("ql3_run_queue_depth", "Runs waiting to start (queued or retry_wait)", nil, float64(queued))
	age := 0.0
	if g.OldestQueuedCreatedMs > 0 {
		age = max(0, float64(m.Clock.Now().UnixMilli()-g.OldestQueuedCreatedMs)/1000)
	}
	w.Gauge("ql3_run_queue_oldest_age_seconds", "age of the oldest Run waiting to start (0 when none waits)", nil, age)
	w.Gauge("ql3_runner_attempts_running", "attempts this process is running", nil, float64(m.engine.runner.Running()))
	return nil
}
