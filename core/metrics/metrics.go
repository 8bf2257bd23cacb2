// Package metrics writes the Prometheus text exposition format (version
// 0.0.4) with the standard library only, and holds the few instruments the
// binaries need: a fixed-bucket histogram and per-route HTTP statistics.
//
// Why not prometheus/client_golang: linked into ql3-edge it costs about
// 4 MiB of stripped binary (protobuf, client_model, common, procfs), which
// would take the edge past its 16 MiB budget (ADR 0028). The text format
// is small and stable; this package writes exactly what a scraper parses.
package metrics

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ContentType is the exposition's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Collector writes a process's own families into a scrape; an error fails
// the scrape rather than serving partial figures.
type Collector func(ctx context.Context, w *Writer) error

// Render writes one whole scrape into memory: collect (if any), then each
// of also (e.g. HTTPStats.Write). The exposition is rendered before any of
// it is served, so a failed collector never leaves a half-written 200
// behind; on an error the caller answers 503.
func Render(ctx context.Context, collect Collector, also ...func(*Writer)) ([]byte, error) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if collect != nil {
		if err := collect(ctx, w); err != nil {
			return nil, err
		}
	}
	for _, f := range also {
		f(w)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Label is one name="value" pair.
type Label struct{ Name, Value string }

// Writer writes one exposition: families in the order they are begun.
// Errors are sticky and reported by Flush.
type Writer struct {
	w    *bufio.Writer
	seen map[string]bool
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriter(w), seen: map[string]bool{}}
}

// Family starts a metric family (HELP and TYPE lines) once per name; kind
// is counter, gauge or histogram. Later calls with the same name add
// samples to the family already begun.
func (w *Writer) Family(name, kind, help string) {
	if w.seen[name] {
		return
	}
	w.seen[name] = true
	w.w.WriteString("# HELP ")
	w.w.WriteString(name)
	w.w.WriteByte(' ')
	w.w.WriteString(escapeHelp(help))
	w.w.WriteString("\n# TYPE ")
	w.w.WriteString(name)
	w.w.WriteByte(' ')
	w.w.WriteString(kind)
	w.w.WriteByte('\n')
}

// Sample writes one sample line.
func (w *Writer) Sample(name string, labels []Label, v float64) {
	w.w.WriteString(name)
	if len(labels) > 0 {
		w.w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.w.WriteByte(',')
			}
			w.w.WriteString(l.Name)
			w.w.WriteString(`="`)
			w.w.WriteString(escapeValue(l.Value))
			w.w.WriteByte('"')
		}
		w.w.WriteByte('}')
	}
	w.w.WriteByte(' ')
	w.w.WriteString(FormatValue(v))
	w.w.WriteByte('\n')
}

// Counter writes a one-sample counter family.
func (w *Writer) Counter(name, help string, labels []Label, v float64) {
	w.Family(name, "counter", help)
	w.Sample(name, labels, v)
}

// Gauge writes a one-sample gauge family.
func (w *Writer) Gauge(name, help string, labels []Label, v float64) {
	w.Family(name, "gauge", help)
	w.Sample(name, labels, v)
}

// Histogram writes the _bucket, _sum and _count samples of one histogram
// series. bounds are the upper bounds; counts are per bucket (not
// cumulative), one per bound plus +Inf last; scale multiplies bounds and
// sum (1e-3 turns milliseconds into seconds).
func (w *Writer) Histogram(name string, labels []Label, bounds []float64, counts []int64, sum float64) {
	var cum int64
	le := make([]Label, len(labels)+1)
	copy(le, labels)
	for i, c := range counts {
		cum += c
		bound := math.Inf(1)
		if i < len(bounds) {
			bound = bounds[i]
		}
		le[len(labels)] = Label{"le", FormatValue(bound)}
		w.Sample(name+"_bucket", le, float64(cum))
	}
	w.Sample(name+"_sum", labels, sum)
	w.Sample(name+"_count", labels, float64(cum))
}

// Flush writes what is buffered and returns the first error.
func (w *Writer) Flush() error { return w.w.Flush() }

// FormatValue formats a sample value as the text format expects.
func FormatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
var valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeValue(s string) string { return valueEscaper.Replace(s) }

// Histogram counts observations into fixed buckets; safe for concurrent use.
type Histogram struct {
	bounds  []float64
	buckets []atomic.Int64 // len(bounds)+1, +Inf last
	count   atomic.Int64
	sumBits atomic.Uint64 // float64 sum, updated by CAS
}

// NewHistogram returns a histogram with the given ascending upper bounds.
func NewHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, buckets: make([]atomic.Int64, len(bounds)+1)}
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v: the le bucket
	h.buckets[i].Add(1)
	h.count.Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Snapshot returns per-bucket counts (+Inf last) and the sum.
func (h *Histogram) Snapshot() (counts []int64, sum float64) {
	counts = make([]int64, len(h.buckets))
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
	}
	return counts, math.Float64frombits(h.sumBits.Load())
}

// Write writes the histogram as family name.
func (h *Histogram) Write(w *Writer, name, help string, labels []Label) {
	w.Family(name, "histogram", help)
	counts, sum := h.Snapshot()
	w.Histogram(name, labels, h.bounds, counts, sum)
}

// DurationBounds are the request-duration buckets, in seconds.
var DurationBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// HTTPStats counts requests by route pattern, method and status code and
// times them by route. Routes are ServeMux patterns (a fixed set), never
// raw paths, so the series stay bounded; an unmatched request counts as
// route "unmatched".
type HTTPStats struct {
	mu        sync.Mutex
	requests  map[httpKey]int64
	durations map[string]*Histogram
}

type httpKey struct {
	route, method string
	code          int
}

// NewHTTPStats returns empty statistics.
func NewHTTPStats() *HTTPStats {
	return &HTTPStats{requests: map[httpKey]int64{}, durations: map[string]*Histogram{}}
}

// Route returns the label for a request's matched ServeMux pattern with
// its method prefix removed ("GET /api/v1/tasks/{task}" → "/api/v1/tasks/{task}").
func Route(pattern string) string {
	if pattern == "" {
		return "unmatched"
	}
	if _, p, ok := strings.Cut(pattern, " "); ok {
		return p
	}
	return pattern
}

// Observe records one finished request.
func (s *HTTPStats) Observe(route, method string, code int, took time.Duration) {
	method = normalizeMethod(method)
	s.mu.Lock()
	s.requests[httpKey{route, method, code}]++
	h := s.durations[route]
	if h == nil {
		h = NewHistogram(DurationBounds)
		s.durations[route] = h
	}
	s.mu.Unlock()
	h.Observe(took.Seconds())
}

// normalizeMethod keeps the label set bounded: unknown methods are "other".
func normalizeMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "other"
}

// Write writes ql3_http_requests_total and ql3_http_request_duration_seconds.
func (s *HTTPStats) Write(w *Writer) {
	s.mu.Lock()
	keys := make([]httpKey, 0, len(s.requests))
	for k := range s.requests {
		keys = append(keys, k)
	}
	counts := make(map[httpKey]int64, len(keys))
	for _, k := range keys {
		counts[k] = s.requests[k]
	}
	routes := make([]string, 0, len(s.durations))
	for r := range s.durations {
		routes = append(routes, r)
	}
	hists := make(map[string]*Histogram, len(routes))
	for _, r := range routes {
		hists[r] = s.durations[r]
	}
	s.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.route != b.route {
			return a.route < b.route
		}
		if a.method != b.method {
			return a.method < b.method
		}
		return a.code < b.code
	})
	sort.Strings(routes)
	w.Family("ql3_http_requests_total", "counter", "HTTP requests served, by route pattern, method and status code")
	for _, k := range keys {
		w.Sample("ql3_http_requests_total", []Label{{"route", k.route}, {"method", k.method}, {"code", strconv.Itoa(k.code)}}, float64(counts[k]))
	}
	for _, r := range routes {
		hists[r].Write(w, "ql3_http_request_duration_seconds", "HTTP request durations by route pattern", []Label{{"route", r}})
	}
}
