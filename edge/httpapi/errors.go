package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/ql3/ql3/core/errs"
)

// ErrorBody is the JSON shape of every error response. Code is one of the
// core/errs codes; Field names the offending input as a dotted JSON path (or a
// query parameter / header name) when there is one.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Status maps an errs code to its HTTP status. Unknown codes are 500.
func Status(code string) int {
	switch code {
	case errs.Invalid:
		return http.StatusBadRequest
	case errs.TooLarge:
		return http.StatusRequestEntityTooLarge
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Conflict:
		return http.StatusConflict
	case errs.Unauthorized:
		return http.StatusUnauthorized
	case errs.Forbidden:
		return http.StatusForbidden
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// CodeForStatus is the inverse of Status for clients that receive an error
// without a JSON body (a proxy, a crash): the closest code for the status.
func CodeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType:
		return errs.Invalid
	case http.StatusRequestEntityTooLarge:
		return errs.TooLarge
	case http.StatusNotFound:
		return errs.NotFound
	case http.StatusConflict, http.StatusPreconditionFailed:
		return errs.Conflict
	case http.StatusUnauthorized:
		return errs.Unauthorized
	case http.StatusForbidden:
		return errs.Forbidden
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return errs.Unavailable
	default:
		return errs.Internal
	}
}

// writeError writes err as an ErrorBody. Internal errors are logged with
// their detail and answered with a generic message, so driver text, paths
// and the like never reach a client.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := errs.Code(err)
	body := ErrorBody{Code: code, Field: errs.Field(err)}
	var e *errs.Error
	if errors.As(err, &e) && code != errs.Internal {
		body.Message = e.Message
	} else {
		body.Code = errs.Internal
		body.Message = "internal error"
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, Status(body.Code), body)
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
