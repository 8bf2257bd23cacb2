package httpkit

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/ql3/ql3/core/errs"
)

// ErrorBody is the JSON shape of every error response: core/errs.Body.
type ErrorBody = errs.Body

// WriteJSON writes v as JSON with status (HTML characters unescaped).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteRaw writes an already encoded JSON body with status and its
// Content-Length (the worker wire's encoders produce the bytes).
func WriteRaw(w http.ResponseWriter, status int, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

// WriteError writes err as an ErrorBody with the status its code maps to.
// Internal errors are answered with a generic message (errs.Public).
func WriteError(w http.ResponseWriter, err error) {
	body, _ := errs.Public(err)
	WriteJSON(w, errs.HTTPStatus(body.Code), body)
}

// WriteErrorStatus writes e as an ErrorBody with an explicit status, for
// answers whose status is not the code's own (421, 429).
func WriteErrorStatus(w http.ResponseWriter, status int, e *errs.Error) {
	raw, _ := json.Marshal(ErrorBody{Code: e.Code, Message: e.Message, Field: e.Field})
	WriteRaw(w, status, raw)
}

// Fail writes err like WriteError and logs what a client must not see:
// internal errors with their detail (error level), unavailability (warn).
// Driver text, paths and the like never reach the client.
func Fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	body, internal := errs.Public(err)
	switch {
	case internal:
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case body.Code == errs.Unavailable:
		log.WarnContext(r.Context(), "request unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	WriteJSON(w, errs.HTTPStatus(body.Code), body)
}

// ServeDocument returns a handler that serves an embedded JSON document
// (an API's OpenAPI 3.1 document, generated from its route table: ADR 0029).
func ServeDocument(doc []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(doc)
	}
}
