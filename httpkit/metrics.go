package httpkit

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/metrics"
)

// MetricsTimeout bounds one scrape's store reads.
const MetricsTimeout = 5 * time.Second

// ServeMetrics answers a Prometheus scrape for both APIs: the process's own
// families (collect) plus the extra writers (HTTP stats), rendered whole
// before anything is sent, so a failed collection is a 503 and never a
// half-written 200. Access is the caller's route policy.
func ServeMetrics(w http.ResponseWriter, r *http.Request, log *slog.Logger, collect metrics.Collector, also ...func(*metrics.Writer)) {
	ctx, cancel := context.WithTimeout(r.Context(), MetricsTimeout)
	defer cancel()
	body, err := metrics.Render(ctx, collect, also...)
	if err != nil {
		log.WarnContext(r.Context(), "metrics: collect failed", "err", err)
		http.Error(w, "metrics unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", metrics.ContentType)
	_, _ = w.Write(body)
}
