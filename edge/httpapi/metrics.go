package httpapi

import (
	"net/http"

	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/httpkit"
)

// Collector writes the process's own families into a scrape (metrics.Render).
type Collector = metrics.Collector

// metricsHandler serves the Prometheus text exposition. Access follows the
// API's read policy (Auth): a loopback peer that addressed a loopback Host
// reads without a credential, anyone else needs the admin token; with
// --no-auth only loopback is served at all.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	httpkit.ServeMetrics(w, r, s.log, s.collect, s.httpStats.Write)
}
