package httpapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// The browser UI the app mounts (the web panel, module panel, ADR 0026:
// its page and files at / and /panel/ and the schedule preview) and the
// session endpoints it signs in with (the admin token → an HttpOnly
// SameSite=Strict cookie, ADR 0027).
func (s *Server) panelRoutes(mux httpkit.Mux) {
	if s.ui != nil {
		s.ui.Routes(mux, s.now)
	}
	api := &httpkit.SessionAPI{Sessions: s.sessions, Server: "ql3-edge", AuthDisabled: s.auth.Disabled,
		Verify: func(_ context.Context, token string) (string, error) {
			if len(token) > maxTokenLength {
				return "", errs.E(errs.Unauthorized, "token", "invalid token")
			}
			d := DigestToken(token)
			if subtle.ConstantTimeCompare(d[:], s.auth.Digest[:]) != 1 {
				return "", errs.E(errs.Unauthorized, "token", "invalid token")
			}
			return "", nil // the edge has one admin token: the session itself is the proof
		}}
	api.Routes(mux)
}

// sessionAllows reports whether the request is authorized by a panel
// session cookie: no Authorization header (a presented token is always
// checked), a live session, and a change only from this origin's page.
func (s *Server) sessionAllows(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return false
	}
	v, ok := s.sessions.Lookup(r)
	if !ok {
		return false
	}
	// An account's session ends with the account (ADR 0049).
	if name, isUser := strings.CutPrefix(v, "user:"); isUser {
		if s.access == nil {
			return false
		}
		if _, err := s.access.GetUser(r.Context(), name); err != nil {
			return false
		}
	}
	return httpkit.CookieMayAuthorize(r)
}
