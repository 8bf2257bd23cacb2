package adminapi

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/ql3/ql3/core/metrics"
)

// Collector writes the process's own families (scheduler, sweeper, cluster
// gauges) into a scrape; an error fails the scrape with 503 rather than
// serving partial figures.
type Collector func(ctx context.Context, w *metrics.Writer) error

// MetricsPath is the Prometheus scrape endpoint on the admin listener.
const MetricsPath = "/metrics"

const metricsTimeout = 5 * time.Second

// metricsHandler serves the Prometheus text exposition. wrap lets a
// loopback scraper in without a token (scrapeFromLoopback); anyone else
// needs an API token, like every admin route.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), metricsTimeout)
	defer cancel()
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
