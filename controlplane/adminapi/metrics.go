package adminapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/httpkit"
)

// Collector writes the process's own families into a scrape (metrics.Render).
type Collector = metrics.Collector

// MetricsPath is the Prometheus scrape endpoint on the admin listener.
const MetricsPath = "/metrics"

// metricsHandler serves the Prometheus text exposition. wrap lets a
// loopback scraper in without a token (scrapeFromLoopback); anyone else
// needs an API token, like every admin route.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	httpkit.ServeMetrics(w, r, s.log, s.collect, s.httpStats.Write)
}

// scrapeFromLoopback reports whether r is a GET of /metrics without an
// Authorization header from a loopback peer that addressed a loopback Host
// (so a DNS-rebinding page, whose Host is its own name, is not one).
func scrapeFromLoopback(r *http.Request) bool {
	if r.URL.Path != MetricsPath || r.Method != http.MethodGet || r.Header.Get("Authorization") != "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !peer.Unmap().IsLoopback() {
		return false
	}
	h := r.Host
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}
