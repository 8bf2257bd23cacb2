package adminapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/panel"
)

// ErrorBody is the JSON shape of every error response (the edge API's:
// core/errs.Body).
type ErrorBody = errs.Body

// fail writes err as an ErrorBody. Internal errors are logged with their
// detail and answered generically, so driver text never reaches a client.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	body, internal := errs.Public(err)
	switch {
	case internal:
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case body.Code == errs.Unavailable:
		s.log.WarnContext(r.Context(), "request unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	panel.WriteJSON(w, errs.HTTPStatus(body.Code), body)
}

// bodyLimits are the structural limits of a request body; the spec inside
// is checked again, more tightly, by core/spec.
func bodyLimits(maxBytes int) canonjson.Limits {
	return canonjson.Limits{MaxBytes: maxBytes, MaxDepth: 16, MaxEntries: 256, MaxString: 16 << 10}
}

// readBody reads at most maxBytes; a longer body is TooLarge and the rest is
// not read (MaxBytesReader closes the connection after the response).
func readBody(w http.ResponseWriter, r *http.Request, maxBytes int) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, errs.Invalidf("Content-Type", "must be application/json, got %.64q", ct)
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxBytes)))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errs.TooLargef("", "request body exceeds the limit of %d bytes", maxBytes)
		}
		return nil, errs.Invalidf("", "reading the request body failed")
	}
	if len(data) > 0 && r.Header.Get("Content-Type") == "" {
		return nil, errs.Invalidf("Content-Type", "a JSON body needs Content-Type: application/json")
	}
	return data, nil
}

// decodeBody strictly decodes a required JSON object body into v.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := readBody(w, r, s.maxBody)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return errs.Invalidf("", "request body is empty; expected a JSON object")
	}
	return canonjson.DecodeStrict(data, bodyLimits(s.maxBody), v)
}

// decodeOptionalBody is decodeBody for endpoints whose body may be empty.
func (s *Server) decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := readBody(w, r, s.maxBody)
	if err != nil || len(data) == 0 {
		return err
	}
	return canonjson.DecodeStrict(data, bodyLimits(s.maxBody), v)
}

// pageRequest reads ?limit= and ?cursor=.
func pageRequest(r *http.Request) (controlplane.ListRequest, error) {
	q := r.URL.Query()
	pr := controlplane.ListRequest{Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > controlplane.MaxListLimit {
			return pr, errs.Invalidf("limit", "must be 1..%d, got %.16q", controlplane.MaxListLimit, v)
		}
		pr.Limit = n
	}
	if len(pr.Cursor) > 256 {
		return pr, errs.Invalidf("cursor", "not a cursor of this list")
	}
	return pr, nil
}

func queryInt64(r *http.Request, name string, min int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return 0, errs.Invalidf(name, "must be an integer >= %d, got %.24q", min, v)
	}
	return n, nil
}

// List is the envelope of every list response (the edge API's).
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

func listOf[T any](p controlplane.ListPage[T]) List[T] {
	items := p.Items
	if items == nil {
		items = []T{}
	}
	return List[T]{Items: items, NextCursor: p.NextCursor}
}
