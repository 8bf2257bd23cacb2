package adminapi

import (
	"context"
	"net/http"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/panel"
)

// The web panel (module panel, ADR 0026) on the admin API: its page and
// files at / and /panel/, the session endpoints (ADR 0027: sign in with an
// API token → an HttpOnly SameSite=Strict cookie whose session keeps the
// token, authenticated again on every request so revoking the token ends
// the session) and the schedule preview.
func (s *Server) panelRoutes(mux routeMux) {
	panel.Routes(mux)
	api := &panel.SessionAPI{Sessions: s.sessions, Server: "ql3-control",
		Verify: func(ctx context.Context, token string) (string, error) {
			if _, err := s.b.AuthenticateAPIToken(ctx, token); err != nil {
				return "", err
			}
			return token, nil
		}}
	api.Routes(mux)
	mux.HandleFunc("GET "+panel.PreviewPath, panel.PreviewHandler(s.now))
}

// isOpenPath lists what needs no credential: health probes, the panel's
// static files (they hold no data) and the session endpoints (sign-in
// checks the token itself).
func isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || panel.IsAssetPath(p) || p == panel.SessionPath
}

// sessionToken returns the API token of the request's panel session when
// the request carries no Authorization header (a presented token is always
// the one checked). A change authorized by the cookie must come from this
// origin's page (panel.CookieMayAuthorize).
func (s *Server) sessionToken(r *http.Request) (string, bool, error) {
	if r.Header.Get("Authorization") != "" {
		return "", false, nil
	}
	tok, ok := s.sessions.Lookup(r)
	if !ok {
		return "", false, nil
	}
	if !panel.CookieMayAuthorize(r) {
		return "", false, errs.E(errs.Forbidden, "Origin", "a change made with the panel's session must come from this server's own page")
	}
	return tok, true, nil
}
