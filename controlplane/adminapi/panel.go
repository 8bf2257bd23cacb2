package adminapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/ql3/ql3/controlplane/accessapi"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// The browser UI the app mounts on the admin API (the web panel, module
// panel, ADR 0026: its page and files at / and /panel/ and the schedule
// preview) and the session endpoints it signs in with (ADR 0027: an API
// token → an HttpOnly SameSite=Strict cookie whose session keeps the
// token, authenticated again on every request so revoking the token ends
// the session).
func (s *Server) panelRoutes(mux httpkit.Mux) {
	if s.ui != nil {
		s.ui.Routes(mux, s.now)
	}
	api := &httpkit.SessionAPI{Sessions: s.sessions, Server: "ql3-control",
		Verify: func(ctx context.Context, token string) (string, error) {
			if _, err := s.b.AuthenticateAPIToken(ctx, token); err != nil {
				return "", err
			}
			return token, nil
		}}
	api.Routes(mux)
}

// isOpenPath lists what needs no credential: health probes, the UI's open
// files (they hold no data) and the session endpoints (sign-in checks the
// token itself).
func (s *Server) isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == httpkit.SessionPath || p == accessapi.PasswordSignInPath || (s.ui != nil && s.ui.Open(p)) ||
		strings.HasPrefix(p, "/open/") // app tokens, checked by the Open API itself (ADR 0057)
}

// sessionToken returns the API token of the request's panel session when
// the request carries no Authorization header (a presented token is always
// the one checked). A change authorized by the cookie must come from this
// origin's page (httpkit.CookieMayAuthorize).
func (s *Server) sessionToken(r *http.Request) (string, bool, error) {
	if r.Header.Get("Authorization") != "" {
		return "", false, nil
	}
	tok, ok := s.sessions.Lookup(r)
	if !ok {
		return "", false, nil
	}
	if !httpkit.CookieMayAuthorize(r) {
		return "", false, errs.E(errs.Forbidden, "Origin", "a change made with the panel's session must come from this server's own page")
	}
	return tok, true, nil
}
