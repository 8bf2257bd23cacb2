package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/metrics"
)

// Collector writes the process's own families into a scrape (metrics.Render).
type Collector = metrics.Collector

// metricsTimeout bounds one scrape's store reads.
const metricsTimeout = 5 * time.Second

// metricsHandler serves the Prometheus text exposition. Access follows the
// API's read policy (Auth): a loopback peer that addressed a loopback Host
// reads without a credential, anyone else needs the admin token; with
// --no-auth only loopback is served at all.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), metricsTimeout)
	defer cancel()
	body, err := metrics.Render(ctx, s.collect, s.httpStats.Write)
	if err != nil {
		s.log.WarnContext(r.Context(), "metrics: collect failed", "err", err)
		http.Error(w, "metrics unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", metrics.ContentType)
	_, _ = w.Write(body)
}
