package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/httpkit"
)

// wrap applies, outermost first: panic recovery, access log, auth.
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.onReq != nil {
			s.onReq()
		}
		start := s.now()
		rec := &httpkit.StatusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rec.Status == 0 {
					httpkit.Fail(rec, r, s.log, errs.E(errs.Internal, "", "internal error"))
				}
			}
			took := s.now().Sub(start)
			// r.Pattern is the ServeMux pattern the request matched (the mux
			// sets it on this request); raw paths would not bound the series.
			s.httpStats.Observe(metrics.Route(r.Pattern), r.Method, rec.Status, took)
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.String("route", r.Pattern),
				slog.Int("status", rec.Status), slog.Int64("bytes", rec.Bytes),
				slog.Duration("took", took))
		}()
		w.Header().Set("Cache-Control", "no-store")
		if err := s.requestPolicy(r); err != nil {
			httpkit.Fail(rec, r, s.log, err)
			return
		}
		if !s.isOpenPath(r.URL.Path) && !s.sessionAllows(r) {
			if err := s.auth.check(r); err != nil {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="ql3-edge"`)
				httpkit.Fail(rec, r, s.log, err)
				return
			}
		}
		next.ServeHTTP(rec, r)
	})
}

// crossOrigin refuses browser requests with side effects from another
// origin (Sec-Fetch-Site, else Origin against Host); requests without
// either header (the CLI, curl) and safe methods pass.
var crossOrigin = http.NewCrossOriginProtection()

// requestPolicy runs before authentication, on every request:
//
//   - Without the admin token (--no-auth, loopback listeners only) the
//     Host check stays: only a loopback peer that addressed a loopback Host
//     is served, so a DNS-rebinding page (Host: its own name) gets nothing.
//     The health probes stay open.
//   - A mutating request from a foreign Origin is refused whatever its
//     credentials: a web page the user visits cannot drive the API.
//
// JSON bodies must also say Content-Type: application/json (httpkit.ReadBody), so a
// cross-site "simple" request without a preflight never decodes.
func (s *Server) requestPolicy(r *http.Request) error {
	if s.auth.Disabled && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !isLoopbackRequest(r) {
		return errs.E(errs.Forbidden, "Host", "without the admin token (--no-auth) only requests from this machine to a loopback address (127.0.0.1, [::1], localhost) are served")
	}
	if err := crossOrigin.Check(r); err != nil {
		return errs.E(errs.Forbidden, "Origin", "cross-origin request refused: a change must come from this server's own origin or from a non-browser client")
	}
	return nil
}

// isOpenPath lists what needs no credential: health probes, the UI's open
// files (they hold no data; the API calls they make do) and the session
// endpoints (sign-in checks the token or the password itself) and the
// Open API (it checks its app tokens itself, ADR 0048), and sendNotify (a
// Run's token).
func (s *Server) isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == httpkit.SessionPath || p == PasswordSignInPath ||
		strings.HasPrefix(p, "/open/") || (s.ui != nil && s.ui.Open(p)) ||
		p == notify.SendPath || // checks a Run's notify token itself (notify.go)
		p == PullSourcePath || p == PullAppliedPath // a pull's Run token (subscriptions.go)
}

func (s *Server) now() time.Time { return s.clock() }
