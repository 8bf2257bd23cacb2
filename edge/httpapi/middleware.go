package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/panel"
)

// statusRecorder remembers the status for the access log and forwards
// Flush so streamed log follows still reach the client byte by byte.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// wrap applies, outermost first: panic recovery, access log, auth.
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.onReq != nil {
			s.onReq()
		}
		start := s.now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, r, s.log, errs.E(errs.Internal, "", "internal error"))
				}
			}
			took := s.now().Sub(start)
			// r.Pattern is the ServeMux pattern the request matched (the mux
			// sets it on this request); raw paths would not bound the series.
			s.httpStats.Observe(metrics.Route(r.Pattern), r.Method, rec.status, took)
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.String("route", r.Pattern),
				slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes),
				slog.Duration("took", took))
		}()
		w.Header().Set("Cache-Control", "no-store")
		if err := s.requestPolicy(r); err != nil {
			writeError(rec, r, s.log, err)
			return
		}
		if !isOpenPath(r.URL.Path) && !s.sessionAllows(r) {
			if err := s.auth.check(r); err != nil {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="ql3-edge"`)
				writeError(rec, r, s.log, err)
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
// JSON bodies must also say Content-Type: application/json (readBody), so a
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

// isOpenPath lists what needs no credential: health probes, the panel's
// static files (they hold no data; the API calls they make do) and the
// session endpoints (sign-in checks the token itself).
func isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || panel.IsAssetPath(p) || p == panel.SessionPath
}

func (s *Server) now() time.Time { return s.clock() }
