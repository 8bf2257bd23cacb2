package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/metrics"
)

// Collector writes the process's own families (scheduler, runner, store)
// into a scrape. It is called once per GET /metrics with a bounded context;
// an error fails the scrape with 503 rather than serving partial figures.
type Collector func(ctx context.Context, w *metrics.Writer) error

// metricsTimeout bounds one scrape's store reads.
const metricsTimeout = 5 * time.Second

// metricsHandler serves the Prometheus text exposition. Access follows the
// API's read policy (Auth): a loopback peer that addressed a loopback Host
// reads without a credential, anyone else needs the admin token; with
// --no-auth only loopback is served at all.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), metricsTimeout)
	defer cancel()
	// Render into a buffer first: a failed collector must not leave a
	// half-written 200 behind.
	var buf bytes.Buffer
	mw := metrics.NewWriter(&buf)
	if s.collect != nil {
		if err := s.collect(ctx, mw); err != nil {
			s.log.WarnContext(r.Context(), "metrics: collect failed", "err", err)
			http.Error(w, "metrics unavailable", http.StatusServiceUnavailable)
			return
		}
	}
	s.httpStats.Write(mw)
	if err := mw.Flush(); err != nil {
		http.Error(w, "metrics unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", metrics.ContentType)
	_, _ = w.Write(buf.Bytes())
}
