package httpapi

import (
	"crypto/rand"
	"errors"
	"github.com/ql3/ql3/core/accountwire"
	"net/http"
	"strconv"
	"sync"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/password"
	"github.com/ql3/ql3/core/totp"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

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

// SignInLine is one line of the sign-in log.
type SignInLine struct {
	Seq      int64  `json:"seq"`
	AtMs     int64  `json:"atMs"`
	Username string `json:"username"`
	Outcome  string `json:"outcome"`
	Remote   string `json:"remote"`
}

func (s *Server) userRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/users", s.withAccess(s.listUsers))
	mux.HandleFunc("POST /api/v1/users", s.withAccess(s.createUser))
	mux.HandleFunc("DELETE /api/v1/users/{username}", s.withAccess(s.deleteUser))
	mux.HandleFunc("PUT /api/v1/users/{username}/password", s.withAccess(s.setPassword))
	mux.HandleFunc("POST /api/v1/users/{username}/totp/setup", s.withAccess(s.totpSetup))
	mux.HandleFunc("PUT /api/v1/users/{username}/totp", s.withAccess(s.totpConfirm))
	mux.HandleFunc("DELETE /api/v1/users/{username}/totp", s.withAccess(s.totpOff))
	mux.HandleFunc("GET /api/v1/signins", s.withAccess(s.listSignIns))
	mux.HandleFunc("POST "+PasswordSignInPath, s.withAccess(s.passwordSignIn))
}

func userView(u edge.User, nowMs int64) UserView {
	v := UserView{Username: u.Username, TOTP: u.TOTPSecret != "", CreatedAtMs: u.CreatedAtMs}
	if u.Lock.LockedUntil > nowMs {
		v.LockedUntilMs = u.Lock.LockedUntil
	}
	return v
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	us, err := s.access.ListUsers(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := List[UserView]{Items: make([]UserView, 0, len(us))}
	for _, u := range us {
		out.Items = append(out.Items, userView(u, s.now().UnixMilli()))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// hash runs the password hash with the sign-in semaphore held: argon2id
// takes 19 MiB each, two at a time at most.
func (s *Server) hash(pw string) (string, error) {
	s.signinMu <- struct{}{}
	defer func() { <-s.signinMu }()
	return password.Hash(pw)
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	var req CreateUserRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := password.CheckUsername(req.Username); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	h, err := s.hash(req.Password)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	u, err := s.access.CreateUser(r.Context(), req.Username, h)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "account created", "user", u.Username)
	httpkit.WriteJSON(w, http.StatusCreated, userView(u, s.now().UnixMilli()))
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) {
	if err := s.access.DeleteUser(r.Context(), r.PathValue("username")); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setPassword(w http.ResponseWriter, r *http.Request) {
	var req PasswordRequest
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	h, err := s.hash(req.Password)
	if err == nil {
		err = s.access.SetPassword(r.Context(), r.PathValue("username"), h)
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) totpSetup(w http.ResponseWriter, r *http.Request) {
	u, err := s.access.GetUser(r.Context(), r.PathValue("username"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	secret, err := totp.NewSecret(rand.Reader)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, TOTPSetup{Secret: secret, URI: totp.URI(totpIssuer, u.Username, secret)})
}

func (s *Server) totpConfirm(w http.ResponseWriter, r *http.Request) {
	var req TOTPConfirm
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	key, err := totp.DecodeSecret(req.Secret)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if _, ok := totp.Verify(key, req.Code, s.now(), 0); !ok {
		httpkit.Fail(w, r, s.log, errs.Invalidf("code", "does not match the secret at this server's time: check the app's clock"))
		return
	}
	if err := s.access.SetTOTP(r.Context(), r.PathValue("username"), req.Secret); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "second factor on", "user", r.PathValue("username"))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) totpOff(w http.ResponseWriter, r *http.Request) {
	if err := s.access.SetTOTP(r.Context(), r.PathValue("username"), ""); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSignIns(w http.ResponseWriter, r *http.Request) {
	before, err := httpkit.QueryInt64(r, "before", 0)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	limit, err := queryLimit(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if limit == 0 {
		limit = edge.DefaultPageSize
	}
	evs, err := s.access.ListSignIns(r.Context(), before, limit)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := List[SignInLine]{Items: make([]SignInLine, 0, len(evs))}
	for _, e := range evs {
		out.Items = append(out.Items, SignInLine{Seq: e.Seq, AtMs: e.AtMs, Username: e.Username, Outcome: e.Outcome, Remote: e.Remote})
	}
	if n := len(evs); n == limit {
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
// every attempt in the sign-in log. Attempts are serialised (signinMu),
// so concurrent wrong passwords cannot slip past the lock.
func (s *Server) passwordSignIn(w http.ResponseWriter, r *http.Request) {
	var req PasswordSignIn
	if err := httpkit.DecodeJSON(w, r, maxAccessBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	peer := peerIP(r)
	if !s.signinLimit.Allow(peer, s.now()) {
		w.Header().Set("Retry-After", "900")
		httpkit.WriteErrorStatus(w, http.StatusTooManyRequests, errs.E(errs.Unavailable, "", "too many failed sign-ins from this address; try again later"))
		return
	}
	s.signinMu <- struct{}{}
	err := s.checkSignIn(r, req, peer)
	<-s.signinMu
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := s.sessions.Issue(w, r, "user:"+req.Username); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, httpkit.SessionStatus{SignedIn: true, Server: "ql3-edge", AuthRequired: !s.auth.Disabled})
}

func (s *Server) checkSignIn(r *http.Request, req PasswordSignIn, peer string) error {
	ctx := r.Context()
	now := s.now()
	ev := edge.SignInEvent{AtMs: now.UnixMilli(), Username: req.Username, Remote: peer}
	u, err := s.access.GetUser(ctx, req.Username)
	if errs.Code(err) == errs.NotFound {
		password.Verify(dummyHash(), req.Password)
		s.signinLimit.Fail(peer, now)
		ev.Outcome = edge.SignInUnknownUser
		return errors.Join(errWrongPassword, s.record(r, ev, u, 0))
	}
	if err != nil {
		return err
	}
	if lockPolicy.Locked(u.Lock, now) {
		ev.Outcome = edge.SignInLocked
		return errors.Join(errs.E(errs.Forbidden, "username", "%s", lockPolicy.Message(u.Lock)), s.record(r, ev, u, 0))
	}
	if !password.Verify(u.PasswordHash, req.Password) {
		return s.failSignIn(r, ev, u, edge.SignInBadPassword, errWrongPassword)
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
			return s.failSignIn(r, ev, u, edge.SignInBadTOTP, errs.E(errs.Unauthorized, "code", "wrong or already used one-time code"))
		}
		counter = n
	}
	ev.Outcome = edge.SignInOK
	u.Lock = lockPolicy.Succeed(u.Lock)
	if err := s.record(r, ev, u, counter); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "signed in", "user", u.Username, "peer", peer)
	return nil
}

func (s *Server) failSignIn(r *http.Request, ev edge.SignInEvent, u edge.User, outcome string, fail error) error {
	now := s.now()
	s.signinLimit.Fail(ev.Remote, now)
	u.Lock = lockPolicy.Fail(u.Lock, now)
	ev.Outcome = outcome
	if err := s.record(r, ev, u, 0); err != nil {
		return err
	}
	if lockPolicy.Locked(u.Lock, now) {
		s.log.WarnContext(r.Context(), "account locked", "user", u.Username, "peer", ev.Remote)
		return errs.E(errs.Forbidden, "username", "%s", lockPolicy.Message(u.Lock))
	}
	return fail
}

func (s *Server) record(r *http.Request, ev edge.SignInEvent, u edge.User, counter uint64) error {
	return s.access.RecordSignIn(r.Context(), ev, u.Lock, counter)
}
