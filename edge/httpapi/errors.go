package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/panel"
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
	panel.WriteJSON(w, errs.HTTPStatus(body.Code), body)
}
