// Package panel is the web panel both ql3-edge and ql3-control serve: one
// set of embedded assets (a static page, a stylesheet and a few KiB of
// vanilla JavaScript driving the JSON API) and the schedule preview
// endpoint its trigger form calls. The binaries' wiring mounts it on their
// API servers as an httpkit.UI; the APIs themselves do not import it, and
// the browser session it signs in with is the HTTP kit's (ADR 0036). It
// links the standard library, core and httpkit only, so the edge does not
// link pgx and the control plane does not link SQLite (ADR 0026).
package panel

import (
	"embed"
	"net/http"
	"strings"
	"time"

	"github.com/ql3/ql3/httpkit"
)

// The assets: index.html (the page), app.js with the files served after it
// in the same response (messages.js, the catalog of app.js's and runs.js's
// strings; pages: runs.js, overview.js, env.js, scripts.js, notify.js, access.js, subs.js), app.css.
//
//go:embed assets/index.html assets/app.js assets/messages.js assets/runs.js assets/overview.js assets/env.js assets/scripts.js assets/notify.js assets/access.js assets/subs.js assets/import.js assets/app.css
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

// UI is the panel as a server mounts it (httpkit.UI): the page, its files
// and the schedule preview.
type UI struct{}

var _ httpkit.UI = UI{}

// Routes registers the page at "GET /{$}", its files at
// "GET /panel/{file}" and the preview at "GET "+PreviewPath (which needs a
// credential like any API call); now is the server's clock.
func (UI) Routes(mux httpkit.Mux, now func() time.Time) {
	Routes(mux)
	mux.HandleFunc("GET "+PreviewPath, PreviewHandler(now))
}

// Open reports the panel's credential-free paths: its page and files.
func (UI) Open(path string) bool { return IsAssetPath(path) }

// Routes registers the page at "GET /{$}" and its files at
// "GET /panel/{file}" on mux.
func Routes(mux httpkit.Mux) {
	mux.HandleFunc("GET /{$}", serveFile("assets/index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /panel/app.js", serveFile("assets/app.js", "text/javascript; charset=utf-8",
		"assets/messages.js", "assets/runs.js", "assets/overview.js", "assets/env.js", "assets/scripts.js", "assets/notify.js", "assets/access.js", "assets/subs.js", "assets/import.js"))
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
