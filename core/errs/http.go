package errs

import "errors"

// Body is the JSON shape of every error response of ql3's HTTP APIs (edge
// and admin alike), so one client can read both: Code is one of the codes
// above; Field names the offending input as a dotted JSON path, a query
// parameter or a header name when there is one.
type Body struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Public returns what a client may see of err. A coded, non-internal error
// keeps its code, field and message; anything else becomes a generic
// internal error so driver text, paths and the like never reach a client,
// and internal reports true so the caller logs the detail.
func Public(err error) (body Body, internal bool) {
	var e *Error
	if code := Code(err); errors.As(err, &e) && code != Internal {
		return Body{Code: code, Field: e.Field, Message: e.Message}, false
	}
	return Body{Code: Internal, Message: "internal error"}, true
}

// FromBody turns an error response back into a coded error (client side).
func FromBody(b Body) *Error { return &Error{Code: b.Code, Field: b.Field, Message: b.Message} }

// HTTPStatus maps a code to its HTTP status. Unknown codes are 500. (The
// numbers are written out: core does not import net/http.)
func HTTPStatus(code string) int {
	switch code {
	case Invalid:
		return 400
	case Unauthorized:
		return 401
	case Forbidden:
		return 403
	case NotFound:
		return 404
	case Conflict:
		return 409
	case TooLarge:
		return 413
	case Unavailable:
		return 503
	default:
		return 500
	}
}

// CodeForHTTPStatus is the closest code for an error status that came
// without a JSON body (a proxy, a crash).
func CodeForHTTPStatus(status int) string {
	switch status {
	case 400, 405, 415:
		return Invalid
	case 401:
		return Unauthorized
	case 403:
		return Forbidden
	case 404:
		return NotFound
	case 409, 412:
		return Conflict
	case 413:
		return TooLarge
	case 429, 503:
		return Unavailable
	default:
		return Internal
	}
}
