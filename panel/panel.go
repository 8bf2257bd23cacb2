// Package panel is the web panel both ql3-edge and ql3-control serve: one
// set of embedded assets (a static page, a stylesheet and a few KiB of
// vanilla JavaScript driving the JSON API), the browser session that turns
// the admin token into an HttpOnly cookie, and the schedule preview
// endpoint. It links the standard library and core only, so the edge does
// not link pgx and the control plane does not link SQLite (ADR 0026).
package panel

import (
	"embed"
	"net/http"
	"strings"
)

// The assets: index.html (the page), app.js with the page files served
// after it in the same response (env.js), app.css.
//
//go:embed assets/index.html assets/app.js assets/env.js assets/app.css
var assets embed.FS

// CSP is the Content-Security-Policy of every panel response: script and
// style from the server's own origin only (no inline code, no eval), API
// calls to the same origin, no frames, no plugins, no foreign forms.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// IsAssetPath reports whether p is served by Assets (and so needs no
// credential: the page holds no data, the API calls it makes do).
func IsAssetPath(p string) bool {
	return p == "/" || strings.HasPrefix(p, "/panel/")
}

// Mux is where routes are registered: *http.ServeMux, or a wrapper that
// also records the patterns (the OpenAPI coverage tests walk them).
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Routes registers the page at "GET /{$}" and its files at
// "GET /panel/{file}" on mux.
func Routes(mux Mux) {
	mux.HandleFunc("GET /{$}", serveFile("assets/index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /panel/app.js", serveFile("assets/app.js", "text/javascript; charset=utf-8", "assets/env.js"))
	mux.HandleFunc("GET /panel/app.css", serveFile("assets/app.css", "text/css; charset=utf-8"))
}

// serveFile serves the embedded file name, followed by the files of more
// (page scripts that plug into app.js through window.ql3Panel: one request,
// no new route on either server).
func serveFile(name, contentType string, more ...string) http.HandlerFunc {
	var body []byte
	for i, f := range append([]string{name}, more...) {
		b, err := assets.ReadFile(f)
		if err != nil {
			panic("panel: missing embedded asset " + f) // a build error, caught by every test
		}
		if i > 0 {
			body = append(body, '\n')
		}
		body = append(body, b...)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		SecurityHeaders(w.Header())
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

// SecurityHeaders sets the headers every panel response carries.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}
