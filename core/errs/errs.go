// Package errs defines the coded errors every ql3 layer speaks.
//
// Domain code returns *Error with a Code from the fixed set below; adapters
// translate driver errors into these codes at their edge, and the HTTP layer
// maps codes to status codes without knowing where an error came from.
package errs

import (
	"errors"
	"fmt"
)

// The codes. They are part of the public API (JSON error bodies), so they
// never change meaning.
const (
	Invalid      = "invalid"      // the input is malformed or out of bounds (400)
	TooLarge     = "too_large"    // a body, list or value exceeds a hard limit (413)
	NotFound     = "not_found"    // the addressed thing does not exist (404)
	Conflict     = "conflict"     // a version, fence or idempotency check failed (409)
	Unauthorized = "unauthorized" // no or a wrong credential (401)
	Forbidden    = "forbidden"    // authenticated but not allowed (403)
	Unavailable  = "unavailable"  // try again later: not ready, draining, overloaded (503)
	Internal     = "internal"     // a bug or an unexpected dependency failure (500)
)

// Error is a coded error. Field names the offending input (a dotted JSON path
// such as "retry.maxAttempts") when there is one.
type Error struct {
	Code    string
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// E builds a coded error.
func E(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Invalidf reports malformed input in field.
func Invalidf(field, format string, args ...any) *Error {
	return E(Invalid, field, format, args...)
}

// TooLargef reports input in field that exceeds a hard limit.
func TooLargef(field, format string, args ...any) *Error {
	return E(TooLarge, field, format, args...)
}

// Conflictf reports a failed version, fence or idempotency check.
func Conflictf(format string, args ...any) *Error {
	return E(Conflict, "", format, args...)
}

// NotFoundf reports a missing entity.
func NotFoundf(format string, args ...any) *Error {
	return E(NotFound, "", format, args...)
}

// Code returns the code of the first *Error in err's chain, Internal for any
// other non-nil error and "" for nil.
func Code(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Field returns the field of the first *Error in err's chain, or "".
func Field(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// Prefix returns err with its field prefixed by parent ("a" + "b" → "a.b").
// Non-coded errors are returned unchanged.
func Prefix(parent string, err error) error {
	var e *Error
	if parent == "" || !errors.As(err, &e) {
		return err
	}
	c := *e
	switch {
	case c.Field == "":
		c.Field = parent
	case c.Field[0] == '[':
		c.Field = parent + c.Field
	default:
		c.Field = parent + "." + c.Field
	}
	return &c
}
