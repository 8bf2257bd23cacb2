package httpapi

import (
	_ "embed"
	"net/http"
)

// panelHTML is the read-only web panel: one static page that lists tasks
// and recent runs through the JSON API. It holds no data itself, so serving
// it needs no credential; the API calls it makes follow the Auth rules (on a
// loopback listener reads need no token; elsewhere the page asks for one and
// keeps it in the tab's sessionStorage only).
//
//go:embed panel/index.html
var panelHTML []byte

func (s *Server) panel(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(panelHTML)
}
