// Package accessapi is the control plane's access routes (ADR 0060):
// scoped API tokens, accounts with their second factor and sign-in log,
// and the password sign-in that makes the panel's browser session. The
// admin API (adminapi) mounts its routes and asks it, on every request,
// whether a token's scopes allow the request and whom a session names.
// The rules are core's: core/access, core/password, core/signin,
// core/totp.
package accessapi

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/httpkit"
)

// Config wires an API.
type Config struct {
	// Tokens creates, lists and revokes scoped tokens; nil answers
	// /api/v1/tokens 503.
	Tokens controlplane.APITokens
	// Accounts stores accounts and the sign-in log; nil answers the
	// account routes and the password sign-in 503.
	Accounts controlplane.Accounts
	// Sessions is the admin API's browser session table.
	Sessions *httpkit.Sessions
	Now      func() time.Time
	Logger   *slog.Logger
}

// API serves the access routes.
type API struct {
	tokens   controlplane.APITokens
	accounts controlplane.Accounts
	sessions *httpkit.Sessions
	now      func() time.Time
	log      *slog.Logger

	// Password sign-ins: a per-peer failure limit, one check at a time
	// per replica, at most two argon2id hashes at once.
	signinLimit *httpkit.FailLimiter
	signinOne   sync.Mutex
	signinMu    chan struct{}
}

// New returns an API.
func New(cfg Config) *API {
	a := &API{tokens: cfg.Tokens, accounts: cfg.Accounts, sessions: cfg.Sessions, now: cfg.Now, log: cfg.Logger,
		signinLimit: httpkit.NewFailLimiter(signinPeerMax, signinPeerWindow), signinMu: make(chan struct{}, 2)}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// Routes registers /api/v1/tokens, /api/v1/users, /api/v1/signins and
// the password sign-in.
func (s *API) Routes(mux httpkit.Mux) {
	s.tokenRoutes(mux)
	s.userRoutes(mux)
}

// List is a page of items (the admin API's shape).
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

func (s *API) fail(w http.ResponseWriter, r *http.Request, err error) { httpkit.Fail(w, r, s.log, err) }
