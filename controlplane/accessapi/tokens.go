package accessapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// Scoped API tokens (ADR 0060, the edge's ADR 0049): every route needs a
// scope (core/access.Needed); a token made before scopes is admin.
//
//	GET    /api/v1/tokens       list (never a secret)
//	POST   /api/v1/tokens       {name, scopes, expiresAtMs?} → the token, shown once
//	DELETE /api/v1/tokens/{id}  revoke

// CreateTokenRequest is the body of POST /api/v1/tokens (the edge's).
type CreateTokenRequest struct {
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	ExpiresAtMs int64    `json:"expiresAtMs,omitempty"`
}

// CreatedToken is a new token: its text is in this response only.
type CreatedToken struct {
	controlplane.APIToken
	Token string `json:"token"`
}

func (s *API) tokenRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/tokens", s.withTokens(s.listTokens))
	mux.HandleFunc("POST /api/v1/tokens", s.withTokens(s.createToken))
	mux.HandleFunc("DELETE /api/v1/tokens/{id}", s.withTokens(s.revokeToken))
}

func (s *API) withTokens(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.tokens == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no token store"))
			return
		}
		h(w, r)
	}
}

// Authorize applies the token's scopes to the request: outside them the
// answer is 403 naming them.
func Authorize(tok controlplane.APIToken, r *http.Request) error {
	have := make([]access.Scope, len(tok.Scopes))
	for i, sc := range tok.Scopes {
		have[i] = access.Scope(sc)
	}
	if len(have) == 0 || access.Allows(have, r.Method, r.URL.Path) {
		return nil // no scopes: a principal that is not a scoped token
	}
	return errs.E(errs.Forbidden, "Authorization", "token %q (scopes %s) may not %s %s",
		tok.Name, strings.Join(tok.Scopes, ","), r.Method, r.URL.Path)
}

func (s *API) listTokens(w http.ResponseWriter, r *http.Request) {
	list, err := s.tokens.ListAPITokens(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, List[controlplane.APIToken]{Items: list})
}

func (s *API) createToken(w http.ResponseWriter, r *http.Request) {
	var req CreateTokenRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var ttl int64
	if req.ExpiresAtMs != 0 {
		ttl = req.ExpiresAtMs - s.now().UnixMilli()
		if ttl <= 0 {
			s.fail(w, r, errs.Invalidf("expiresAtMs", "must be in the future"))
			return
		}
	}
	req.Scopes = slices.Clip(req.Scopes)
	tok, text, err := s.tokens.CreateScopedAPIToken(r.Context(), req.Name, req.Scopes, ttl)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, CreatedToken{APIToken: tok, Token: text})
}

func (s *API) revokeToken(w http.ResponseWriter, r *http.Request) {
	if _, err := s.tokens.RevokeAPIToken(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
