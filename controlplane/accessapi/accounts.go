package accessapi

import (
	"context"
	"crypto/rand"
	"errors"
	"github.com/ql3/ql3/core/accountwire"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/password"
	"github.com/ql3/ql3/core/signin"
	"github.com/ql3/ql3/core/totp"
	"github.com/ql3/ql3/httpkit"
)

// Accounts (ADR 0060; the edge's shapes, ADR 0049). Every route needs the
// admin scope except the password sign-in, which is open.
//
//	GET    /api/v1/users                        accounts
//	POST   /api/v1/users                        {username, password}
//	DELETE /api/v1/users/{username}
//	PUT    /api/v1/users/{username}/password    {password} (also lifts a lock)
//	POST   /api/v1/users/{username}/totp/setup  a fresh secret and its otpauth:// URI (not stored)
//	PUT    /api/v1/users/{username}/totp        {secret, code}: turn the second factor on
//	DELETE /api/v1/users/{username}/totp        turn it off
//	GET    /api/v1/signins                      ?before=&limit= the sign-in log, newest first
//	POST   /api/v1/session/password             {username, password, code?} → the panel's session cookie

// PasswordSignInPath signs in with a username and password.
const PasswordSignInPath = "/api/v1/session/password"

const (
	maxAccessBody    = 8 << 10
	totpIssuer       = "ql3-control"
	signinPeerMax    = 30
	signinPeerWindow = 15 * time.Minute
	userSession      = "user:" // a session value that names an account
)

// LockPolicy is the lockout rule: 10 wrong passwords, 15 minutes.
var LockPolicy = signin.DefaultPolicy

// Wire types of the account routes: one copy in core/accountwire, shared
// by both binaries.
type (
	UserView          = accountwire.UserView
	CreateUserRequest = accountwire.CreateUserRequest
	PasswordRequest   = accountwire.PasswordRequest
	TOTPSetup         = accountwire.TOTPSetup
	TOTPConfirm       = accountwire.TOTPConfirm
	PasswordSignIn    = accountwire.PasswordSignIn
)

func (s *API) userRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/users", s.withAccounts(s.listUsers))
	mux.HandleFunc("POST /api/v1/users", s.withAccounts(s.createUser))
	mux.HandleFunc("DELETE /api/v1/users/{username}", s.withAccounts(s.deleteUser))
	mux.HandleFunc("PUT /api/v1/users/{username}/password", s.withAccounts(s.setPassword))
	mux.HandleFunc("POST /api/v1/users/{username}/totp/setup", s.withAccounts(s.totpSetup))
	mux.HandleFunc("PUT /api/v1/users/{username}/totp", s.withAccounts(s.totpConfirm))
	mux.HandleFunc("DELETE /api/v1/users/{username}/totp", s.withAccounts(s.totpOff))
	mux.HandleFunc("GET /api/v1/signins", s.withAccounts(s.listSignIns))
	mux.HandleFunc("POST "+PasswordSignInPath, s.withAccounts(s.passwordSignIn))
}

func (s *API) withAccounts(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.accounts == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no account store"))
			return
		}
		h(w, r)
	}
}

// AccountSession resolves a session made by a password sign-in: the
// account must still exist (deleting it ends its sessions). An account is
// an operator: no scopes, like the admin token.
func (s *API) AccountSession(ctx context.Context, value string) (controlplane.APIToken, bool, error) {
	name, ok := strings.CutPrefix(value, userSession)
	if !ok {
		return controlplane.APIToken{}, false, nil
	}
	if s.accounts == nil {
		return controlplane.APIToken{}, true, errs.E(errs.Unauthorized, "Authorization", "accounts are not served here")
	}
	if _, err := s.accounts.GetAccount(ctx, name); err != nil {
		if errs.Code(err) == errs.NotFound {
			err = errs.E(errs.Unauthorized, "Authorization", "this session's account no longer exists")
		}
		return controlplane.APIToken{}, true, err
	}
	return controlplane.APIToken{ID: value, Name: name, Status: "active", Live: true}, true, nil
}

func userView(u controlplane.Account, nowMs int64) UserView {
	v := UserView{Username: u.Username, TOTP: u.TOTPSecret != "", CreatedAtMs: u.CreatedAtMs}
	if u.Lock.LockedUntil > nowMs {
		v.LockedUntilMs = u.Lock.LockedUntil
	}
	return v
}

func (s *API) listUsers(w http.ResponseWriter, r *http.Request) {
	us, err := s.accounts.ListAccounts(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := List[UserView]{Items: make([]UserView, 0, len(us))}
	for _, u := range us {
		out.Items = append(out.Items, userView(u, s.now().UnixMilli()))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// hash runs argon2id with the sign-in semaphore held: 19 MiB each, two at
// a time at most.
func (s *API) hash(pw string) (string, error) {
	s.signinMu <- struct{}{}
	defer func() { <-s.signinMu }()
	return password.Hash(pw)
}

func (s *API) createUser(w http.ResponseWriter, r *http.Request) {
	var req CreateUserRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := password.CheckUsername(req.Username); err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := s.hash(req.Password)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	u, err := s.accounts.CreateAccount(r.Context(), req.Username, h, s.now().UnixMilli())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, userView(u, s.now().UnixMilli()))
}

func (s *API) deleteUser(w http.ResponseWriter, r *http.Request) {
	if err := s.accounts.DeleteAccount(r.Context(), r.PathValue("username")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *API) setPassword(w http.ResponseWriter, r *http.Request) {
	var req PasswordRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := s.hash(req.Password)
	if err == nil {
		err = s.accounts.SetPassword(r.Context(), r.PathValue("username"), h)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *API) totpSetup(w http.ResponseWriter, r *http.Request) {
	u, err := s.accounts.GetAccount(r.Context(), r.PathValue("username"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	secret, err := totp.NewSecret(rand.Reader)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, TOTPSetup{Secret: secret, URI: totp.URI(totpIssuer, u.Username, secret)})
}

func (s *API) totpConfirm(w http.ResponseWriter, r *http.Request) {
	var req TOTPConfirm
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	key, err := totp.DecodeSecret(req.Secret)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, ok := totp.Verify(key, req.Code, s.now(), 0); !ok {
		s.fail(w, r, errs.Invalidf("code", "does not match the secret at this server's time: check the app's clock"))
		return
	}
	if err := s.accounts.SetTOTP(r.Context(), r.PathValue("username"), req.Secret); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *API) totpOff(w http.ResponseWriter, r *http.Request) {
	if err := s.accounts.SetTOTP(r.Context(), r.PathValue("username"), ""); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *API) listSignIns(w http.ResponseWriter, r *http.Request) {
	before, err := httpkit.QueryInt64(r, "before", 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := httpkit.QueryInt64(r, "limit", 1)
	if limit == 0 {
		limit = 50
	}
	if err == nil && limit > 200 {
		err = errs.Invalidf("limit", "must be 1..200, got %d", limit)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	evs, err := s.accounts.ListSignIns(r.Context(), before, int(limit))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := List[controlplane.SignIn]{Items: evs}
	if out.Items == nil {
		out.Items = []controlplane.SignIn{}
	}
	if n := len(evs); n == int(limit) {
		out.NextCursor = strconv.FormatInt(evs[n-1].Seq, 10)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// A fixed hash verified for unknown usernames, so their answer takes as
// long as a wrong password's.
var dummyHash = sync.OnceValue(func() string { h, _ := password.Hash("not a password of anyone"); return h })

var errWrongPassword = errs.E(errs.Unauthorized, "password", "wrong username or password")

// passwordSignIn checks a username, password and (when the account has
// the second factor) a TOTP code, applies the lockout policy and records
// every attempt. Attempts are serialised per replica (signinMu holds two
// hashes; the lock state is read and written in the store), and a peer
// that fails 30 times in 15 minutes is refused (429).
func (s *API) passwordSignIn(w http.ResponseWriter, r *http.Request) {
	var req PasswordSignIn
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	peer := peerIP(r)
	if !s.signinLimit.Allow(peer, s.now()) {
		w.Header().Set("Retry-After", "900")
		httpkit.WriteErrorStatus(w, http.StatusTooManyRequests, errs.E(errs.Unavailable, "", "too many failed sign-ins from this address; try again later"))
		return
	}
	s.signinOne.Lock()
	s.signinMu <- struct{}{}
	err := s.checkSignIn(r.Context(), req, peer)
	<-s.signinMu
	s.signinOne.Unlock()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.sessions.Issue(w, r, userSession+req.Username); err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, httpkit.SessionStatus{SignedIn: true, Server: "ql3-control", AuthRequired: true})
}

// peerIP is the request's peer address without the port.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *API) checkSignIn(ctx context.Context, req PasswordSignIn, peer string) error {
	now := s.now()
	ev := controlplane.SignIn{AtMs: now.UnixMilli(), Username: req.Username, Remote: peer}
	u, err := s.accounts.GetAccount(ctx, req.Username)
	if errs.Code(err) == errs.NotFound {
		password.Verify(dummyHash(), req.Password)
		s.signinLimit.Fail(peer, now)
		ev.Outcome = controlplane.SignInUnknownUser
		return errors.Join(errWrongPassword, s.accounts.RecordSignIn(ctx, ev, u.Lock, 0))
	}
	if err != nil {
		return err
	}
	if LockPolicy.Locked(u.Lock, now) {
		ev.Outcome = controlplane.SignInLocked
		return errors.Join(errs.E(errs.Forbidden, "username", "%s", LockPolicy.Message(u.Lock)), s.accounts.RecordSignIn(ctx, ev, u.Lock, 0))
	}
	if !password.Verify(u.PasswordHash, req.Password) {
		return s.failSignIn(ctx, ev, u, controlplane.SignInBadPassword, errWrongPassword)
	}
	var counter uint64
	if u.TOTPSecret != "" {
		if req.Code == "" {
			// The password was right: no failure counted, the client asks for the code.
			return errs.E(errs.Unauthorized, "code", "this account needs its one-time code")
		}
		key, err := totp.DecodeSecret(u.TOTPSecret)
		if err != nil {
			return errs.E(errs.Internal, "", "stored TOTP secret of %s: %v", u.Username, err)
		}
		n, ok := totp.Verify(key, req.Code, now, u.TOTPLastCounter)
		if !ok {
			return s.failSignIn(ctx, ev, u, controlplane.SignInBadTOTP, errs.E(errs.Unauthorized, "code", "wrong or already used one-time code"))
		}
		counter = n
	}
	ev.Outcome = controlplane.SignInOK
	if err := s.accounts.RecordSignIn(ctx, ev, LockPolicy.Succeed(u.Lock), counter); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "signed in", "user", u.Username, "peer", peer)
	return nil
}

func (s *API) failSignIn(ctx context.Context, ev controlplane.SignIn, u controlplane.Account, outcome string, fail error) error {
	now := s.now()
	s.signinLimit.Fail(ev.Remote, now)
	lock := LockPolicy.Fail(u.Lock, now)
	ev.Outcome = outcome
	if err := s.accounts.RecordSignIn(ctx, ev, lock, 0); err != nil {
		return err
	}
	if LockPolicy.Locked(lock, now) {
		s.log.WarnContext(ctx, "account locked", "user", u.Username, "peer", ev.Remote)
		return errs.E(errs.Forbidden, "username", "%s", LockPolicy.Message(lock))
	}
	return fail
}
