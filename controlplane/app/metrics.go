package app

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/coordinator"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/queuestat"
	"github.com/ql3/ql3/core/metrics"
)

var (
	activeRunStatuses   = []string{"created", "queued", "dispatching", "running", "retry_wait", "lost"}
	terminalRunStatuses = []string{"succeeded", "failed", "cancelled", "timed_out"}
	sessionStatuses     = []string{"online", "draining"}
)

// metricsCollector writes this replica's scheduler and sweeper counters
// (coordinator.Metrics, nil when --no-scheduler) and the cluster gauges
// read on the admin pool into a /metrics scrape.
func metricsCollector(pool *pgxpool.Pool, coord func() *coordinator.Coordinator, finished *postgres.FinishedRuns) func(ctx context.Context, w *metrics.Writer) error {
	return func(ctx context.Context, w *metrics.Writer) error {
		g, err := postgres.ReadClusterGauges(ctx, pool)
		if err != nil {
			return err
		}
		done, err := finished.Read(ctx, pool)
		if err != nil {
			return err
		}
		repl, err := postgres.ReadReplication(ctx, pool)
		if err != nil {
			return err
		}
		queue, err := queuestat.New(pool).ReadQueue(ctx)
		if err != nil {
			return err
		}
		atRisk := 0.0
		if repl.FailoverRisk() != "" {
			atRisk = 1
		}
		if c := coord(); c != nil {
			writeCoordinator(w, c.Metrics())
		}
		w.Family("ql3_runs", "gauge", "unfinished Runs in each status (cluster-wide)")
		for _, s := range activeRunStatuses {
			w.Sample("ql3_runs", []metrics.Label{{Name: "status", Value: s}}, float64(g.ActiveRuns[s]))
		}
		w.Family("ql3_runs_finished_total", "counter", "Runs that reached a terminal status since this replica started (cluster-wide: aggregate replicas with max)")
		for _, s := range terminalRunStatuses {
			w.Sample("ql3_runs_finished_total", []metrics.Label{{Name: "status", Value: s}}, float64(done[s]))
		}
		w.Gauge("ql3_run_queue_depth", "queued Runs waiting for a worker (cluster-wide)", nil, float64(g.ActiveRuns["queued"]))
		w.Gauge("ql3_run_queue_oldest_age_seconds", "how long the oldest queued Run has waited (0 when none waits)", nil, float64(g.OldestQueuedAgeMs)/1000)
		writeQueue(w, queue) // queue_metrics.go (ADR 0066)
		w.Family("ql3_worker_sessions", "gauge", "live worker sessions (lease not expired) by status")
		for _, s := range sessionStatuses {
			w.Sample("ql3_worker_sessions", []metrics.Label{{Name: "status", Value: s}}, float64(g.Sessions[s]))
		}
		w.Gauge("ql3_run_leases", "leases held by workers now", nil, float64(g.Leases))
		w.Gauge("ql3_postgres_standbys", "physical standbys streaming from the database", nil, float64(repl.Standbys))
		w.Gauge("ql3_postgres_failover_at_risk", "1 when a standby exists and commits do not wait for it: an unplanned failover can run an occurrence twice (ADR 0033)", nil, atRisk)
		return nil
	}
}

// writeCoordinator writes the coordinator's counters under their stable
// names (Metrics.Counters) and its fire-lag histogram in seconds.
func writeCoordinator(w *metrics.Writer, m *coordinator.Metrics) {
	for _, c := range m.Counters() {
		labels := make([]metrics.Label, len(c.Labels))
		for i, l := range c.Labels {
			labels[i] = metrics.Label{Name: l[0], Value: l[1]}
		}
		w.Family(c.Name, "counter", c.Help)
		w.Sample(c.Name, labels, float64(c.Value))
	}
	bounds := make([]float64, len(coordinator.FireLagBucketsMs))
	for i, b := range coordinator.FireLagBucketsMs {
		bounds[i] = float64(b) / 1000
	}
	counts, _, sumMs := m.FireLag.Snapshot()
	w.Family("ql3_scheduler_fire_lag_seconds", "histogram", "lateness of admitted occurrences: claim time − scheduled time (database clock)")
	w.Histogram("ql3_scheduler_fire_lag_seconds", nil, bounds, counts, float64(sumMs)/1000)
}
