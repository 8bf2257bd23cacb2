package adminapi

import (
	"net/http"
	"strconv"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// ErrorBody is the JSON shape of every error response (the edge API's:
// httpkit.ErrorBody, core/errs.Body).
type ErrorBody = httpkit.ErrorBody

// fail writes err as an ErrorBody (httpkit.Fail: internal errors are
// logged with their detail and answered generically).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	httpkit.Fail(w, r, s.log, err)
}

// decodeBody strictly decodes a required JSON object body into v.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return httpkit.DecodeJSON(w, r, s.maxBody, v)
}

// decodeOptionalBody is decodeBody for endpoints whose body may be empty.
func (s *Server) decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) error {
	return httpkit.DecodeOptionalJSON(w, r, s.maxBody, v)
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
