package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/ql3/ql3/core/errs"
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
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes),
				slog.Duration("took", s.now().Sub(start)))
		}()
		w.Header().Set("Cache-Control", "no-store")
		if !isOpenPath(r.URL.Path) {
			if err := s.auth.check(r); err != nil {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="ql3-edge"`)
				writeError(rec, r, s.log, err)
				return
			}
		}
		next.ServeHTTP(rec, r)
	})
}

// isOpenPath lists what needs no credential: health probes and the static
// panel page (which itself only calls the read API).
func isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/"
}

func (s *Server) now() time.Time { return s.clock() }
