package httpapi

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/core/signin"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// Scoped API tokens, Open API apps and accounts (ADR 0048, 0049). Every
// route here needs the admin token, an admin-scoped token or a panel
// session (core/access.Needed), except the password sign-in.
//
//	GET    /api/v1/tokens                 list (never a secret)
//	POST   /api/v1/tokens                 {name, scopes, expiresAtMs?} → the token, shown once
//	DELETE /api/v1/tokens/{id}            revoke
//	GET    /api/v1/apps                   Open API apps
//	POST   /api/v1/apps                   {name, scopes} → clientId and clientSecret, shown once
//	DELETE /api/v1/apps/{id}
//	GET    /api/v1/users                  accounts
//	POST   /api/v1/users                  {username, password}
//	DELETE /api/v1/users/{username}
//	PUT    /api/v1/users/{username}/password   {password} (also lifts a lock)
//	POST   /api/v1/users/{username}/totp/setup a fresh secret and its otpauth:// URI (not stored)
//	PUT    /api/v1/users/{username}/totp       {secret, code}: turn the second factor on
//	DELETE /api/v1/users/{username}/totp       turn it off
//	GET    /api/v1/signins                ?before=&limit= the sign-in log, newest first
//	POST   /api/v1/session/password       {username, password, code?} → session cookie

// PasswordSignInPath signs in with a username and password.
const PasswordSignInPath = "/api/v1/session/password"

// Sign-in bounds: the account lockout (core/signin) and, per peer, at most
// signinPeerMax failures per signinPeerWindow (it covers unknown names).
const (
	signinPeerMax    = 30
	signinPeerWindow = 15 * time.Minute
	openTokenMax     = qlopen.TokenFailMax
	openTokenWindow  = qlopen.TokenFailWindow
	maxAccessBody    = 8 << 10
	totpIssuer       = "ql3-edge"
)

func (s *Server) initAccess() {
	s.openLimit = newFailLimiter(openTokenMax, openTokenWindow)
	s.signinLimit = newFailLimiter(signinPeerMax, signinPeerWindow)
	s.signinMu = make(chan struct{}, 2)
	if s.openZone == "" {
		s.openZone = "UTC"
	}
	if s.access != nil {
		s.auth.scoped = s.checkScopedToken
	}
}

// checkScopedToken authorizes a request that carries a token other than
// the admin token.
func (s *Server) checkScopedToken(r *http.Request, d TokenDigest) error {
	t, err := s.access.APITokenByDigest(r.Context(), d[:])
	if err != nil {
		return err
	}
	now := s.now().UnixMilli()
	switch {
	case t.RevokedAtMs != 0:
		return errs.E(errs.Unauthorized, "Authorization", "this token was revoked")
	case !t.Live(now):
		return errs.E(errs.Unauthorized, "Authorization", "this token expired at %s", time.UnixMilli(t.ExpiresAtMs).UTC().Format(time.RFC3339))
	case !access.Allows(t.Scopes, r.Method, r.URL.Path):
		return errs.E(errs.Forbidden, "Authorization", "token %q (scopes %s) may not %s %s", t.Name, scopeList(t.Scopes), r.Method, r.URL.Path)
	}
	return nil
}

func scopeList(sc []access.Scope) string {
	out := make([]string, len(sc))
	for i, s := range sc {
		out[i] = string(s)
	}
	return strings.Join(out, ",")
}

func (s *Server) accessRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/tokens", s.withAccess(s.listTokens))
	mux.HandleFunc("POST /api/v1/tokens", s.withAccess(s.createToken))
	mux.HandleFunc("DELETE /api/v1/tokens/{id}", s.withAccess(s.revokeToken))
	mux.HandleFunc("GET /api/v1/apps", s.withAccess(s.listApps))
	mux.HandleFunc("POST /api/v1/apps", s.withAccess(s.createApp))
	mux.HandleFunc("DELETE /api/v1/apps/{id}", s.withAccess(s.deleteApp))
	s.userRoutes(mux) // accounts.go
}

func (s *Server) withAccess(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.access == nil {
			httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server has no access store"))
			return
		}
		h(w, r)
	}
}

// APIToken is a scoped API token as listed (never its secret).
type APIToken struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	CreatedAtMs int64    `json:"createdAtMs"`
	ExpiresAtMs int64    `json:"expiresAtMs,omitempty"`
	RevokedAtMs int64    `json:"revokedAtMs,omitempty"`
	Live        bool     `json:"live"`
}

// CreateTokenRequest is the body of POST /api/v1/tokens.
type CreateTokenRequest struct {
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	ExpiresAtMs int64    `json:"expiresAtMs,omitempty"` // 0: never
}

// CreatedToken is the answer of POST /api/v1/tokens: the token text is
// shown here once and stored only as a digest.
type CreatedToken struct {
	APIToken
	Token string `json:"token"`
}

func (s *Server) tokenView(t edge.APIToken) APIToken {
	return APIToken{ID: t.ID, Name: t.Name, Scopes: strings.Split(scopeList(t.Scopes), ","), CreatedAtMs: t.CreatedAtMs,
		ExpiresAtMs: t.ExpiresAtMs, RevokedAtMs: t.RevokedAtMs, Live: t.Live(s.now().UnixMilli())}
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.access.ListAPITokens(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := List[APIToken]{Items: make([]APIToken, 0, len(ts))}
	for _, t := range ts {
		out.Items = append(out.Items, s.tokenView(t))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req CreateTokenRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	name, err := names.CheckDisplay("name", req.Name)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	scopes, err := access.ParseScopes("scopes", req.Scopes)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if req.ExpiresAtMs != 0 && req.ExpiresAtMs <= s.now().UnixMilli() {
		httpkit.Fail(w, r, s.log, errs.Invalidf("expiresAtMs", "must be in the future (epoch ms), or 0 for never"))
		return
	}
	tok, err := NewAdminToken() // same shape as the admin token: the CLI reads both
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	id := strings.SplitN(strings.TrimPrefix(tok, tokenPrefix), "_", 2)[0]
	d := DigestToken(tok)
	t, err := s.access.CreateAPIToken(r.Context(), edge.APIToken{ID: id, Name: name, Scopes: scopes, ExpiresAtMs: req.ExpiresAtMs}, d[:])
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "api token created", "id", t.ID, "scopes", scopeList(t.Scopes))
	httpkit.WriteJSON(w, http.StatusCreated, CreatedToken{APIToken: s.tokenView(t), Token: tok})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := s.access.RevokeAPIToken(r.Context(), r.PathValue("id"), s.now().UnixMilli()); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "api token revoked", "id", r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
}

// OpenAppView is an Open API app as listed (never its secret).
type OpenAppView struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	ClientID    string   `json:"clientId"`
	CreatedAtMs int64    `json:"createdAtMs"`
}

// CreateAppRequest is the body of POST /api/v1/apps.
type CreateAppRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// CreatedApp is the answer of POST /api/v1/apps: the client secret is
// shown here once and stored only as a digest.
type CreatedApp struct {
	OpenAppView
	ClientSecret string `json:"clientSecret"`
}

func appView(a edge.OpenApp) OpenAppView {
	return OpenAppView{ID: a.ID, Name: a.Name, Scopes: a.Scopes, ClientID: a.ClientID, CreatedAtMs: a.CreatedAtMs}
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request) {
	as, err := s.access.ListOpenApps(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := List[OpenAppView]{Items: make([]OpenAppView, 0, len(as))}
	for _, a := range as {
		out.Items = append(out.Items, appView(a))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func randomAlnum(n int) (string, error) { return qlopen.RandomAlnum(n) }

func (s *Server) createApp(w http.ResponseWriter, r *http.Request) {
	var req CreateAppRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	name, err := qlopen.CheckAppName("name", req.Name)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	scopes, err := access.ParseAppScopes("scopes", req.Scopes)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	id, err := randomAlnum(12)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	secret, err := randomAlnum(24)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	d := sha256.Sum256([]byte(secret))
	a, err := s.access.CreateOpenApp(r.Context(), name, scopes, id, d[:])
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "open api app created", "app", a.Name, "scopes", strings.Join(a.Scopes, ","))
	httpkit.WriteJSON(w, http.StatusCreated, CreatedApp{OpenAppView: appView(a), ClientSecret: secret})
}

func (s *Server) deleteApp(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		httpkit.Fail(w, r, s.log, errs.Invalidf("id", "must be an app's number"))
		return
	}
	if err := s.access.DeleteOpenApp(r.Context(), id); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// lockPolicy is the account lockout rule (core/signin).
var lockPolicy = signin.DefaultPolicy
