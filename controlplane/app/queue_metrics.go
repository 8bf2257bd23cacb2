package app

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/queuestat"
	"github.com/ql3/ql3/core/metrics"
)

// writeQueue writes the Run queue per project and priority (the oldest
// controlplane.MaxQueueGroups groups) and whether it is overloaded (ADR
// 0066): the oldest queued Run waited longer than
// controlplane.DefaultOverloadQueueAgeMs.
func writeQueue(w *metrics.Writer, rep controlplane.QueueReport) {
	w.Family("ql3_run_queue_group_depth", "gauge", "queued Runs per project and priority (the oldest groups; cluster-wide)")
	for _, g := range rep.Groups {
		w.Sample("ql3_run_queue_group_depth", queueLabels(g), float64(g.Depth))
	}
	w.Family("ql3_run_queue_group_oldest_age_seconds", "gauge", "how long the oldest queued Run of a project and priority has waited")
	for _, g := range rep.Groups {
		w.Sample("ql3_run_queue_group_oldest_age_seconds", queueLabels(g), float64(g.OldestAgeMs)/1000)
	}
	truncated := 0.0
	if rep.Truncated {
		truncated = 1
	}
	w.Gauge("ql3_run_queue_groups_truncated", "1 when more project and priority groups are queued than the group metrics list", nil, truncated)
	h := rep.Health(0)
	overloaded := 0.0
	if h.Overloaded {
		overloaded = 1
	}
	w.Gauge("ql3_run_queue_overloaded", "1 when the oldest queued Run has waited longer than the overload threshold: offered load exceeds what the workers take", nil, overloaded)
	w.Gauge("ql3_run_queue_overload_threshold_seconds", "the oldest-queued age above which the queue counts as overloaded", nil, float64(h.ThresholdMs)/1000)
}

func queueLabels(g controlplane.QueueGroup) []metrics.Label {
	return []metrics.Label{{Name: "project", Value: g.ProjectID.String()}, {Name: "priority", Value: strconv.Itoa(g.Priority)}}
}

// queueHealth is /readyz's overload detail on the admin pool; a queue that
// cannot be read (within 2 s) leaves the detail out and the replica ready.
func queueHealth(pool *pgxpool.Pool, log *slog.Logger) func(ctx context.Context) *controlplane.QueueHealth {
	r := queuestat.New(pool)
	return func(ctx context.Context) *controlplane.QueueHealth {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		rep, err := r.ReadQueue(ctx)
		if err != nil {
			log.WarnContext(ctx, "readyz: queue detail unavailable", "err", err)
			return nil
		}
		h := rep.Health(0)
		return &h
	}
}
