// Package httpkit is what every ql3 HTTP server shares: the edge API
// (edge/httpapi), the admin API (controlplane/adminapi), the worker
// ingress (controlplane/ingress) and the web panel (module panel). It
// writes JSON and the {code, message, field} error envelope, reads bounded
// strict JSON bodies, records the status of a response, serves metrics and
// OpenAPI documents, checks client idempotency keys, and keeps the
// browser sessions the panel signs in with (ADR 0027).
//
// It links the standard library and core only, so the edge does not link
// pgx and the control plane does not link SQLite through it. It knows no
// route, store or binary: a server composes it (ADR 0036).
package httpkit

import (
	"net/http"
	"time"
)

// Mux is where routes are registered: *http.ServeMux, or a wrapper that
// also records the patterns (PatternRecorder).
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// PatternRecorder registers on a real mux and remembers each pattern, so
// an OpenAPI coverage test walks the routes actually served.
type PatternRecorder struct {
	Mux
	Patterns []string
}

// HandleFunc registers h on the wrapped mux and records pattern.
func (p *PatternRecorder) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	p.Patterns = append(p.Patterns, pattern)
	p.Mux.HandleFunc(pattern, h)
}

// UI is a browser front end a server mounts beside its API (the web panel,
// which only the binaries' wiring imports). Its routes sit behind the
// server's request policy; Open names those that need no credential
// (static files that hold no data: the API calls they make do).
type UI interface {
	// Routes registers the UI's routes; now is the server's clock.
	Routes(mux Mux, now func() time.Time)
	// Open reports whether path is one of the UI's credential-free routes.
	Open(path string) bool
}
