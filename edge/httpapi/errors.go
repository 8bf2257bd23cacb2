package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/ql3/ql3/core/errs"
)

// ErrorBody is the JSON shape of every error response (shared with the
// admin API: core/errs.Body).
type ErrorBody = errs.Body

// writeError writes err as an ErrorBody. Internal errors are logged with
// their detail and answered with a generic message, so driver text, paths
// and the like never reach a client.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	body, internal := errs.Public(err)
	if internal {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, errs.HTTPStatus(body.Code), body)
}

// writeJSON writes v with status. Encoding errors after the header is sent
// cannot be reported to the client; they only mean the client went away.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
