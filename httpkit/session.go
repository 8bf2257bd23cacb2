package httpkit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// CookieName is the panel's session cookie. Its value is a random session
// id, never the admin token; the server keeps what the id stands for in
// memory (ADR 0027).
const CookieName = "ql3_session"

// Session limits.
const (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxSessions = 1024
	sessionIDBytes     = 32
	maxSignInBody      = 4 << 10
	maxCookieValue     = 2 * sessionIDBytes
)

// Sessions is the in-memory table of browser sessions. A session holds one
// opaque value the binary chose at sign-in (the control plane keeps the
// API token so revoking it ends the session; the edge keeps nothing). Ids
// are looked up by their SHA-256, so the map's timing reveals nothing of a
// live id. Sessions end on sign-out, at their absolute expiry, or when the
// process restarts.
type Sessions struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]session
	ttl time.Duration
	max int
	now func() time.Time
}

type session struct {
	value   string
	expires time.Time
}

// NewSessions returns an empty table; ttl ≤ 0 and max ≤ 0 take the
// defaults, now nil means time.Now.
func NewSessions(ttl time.Duration, max int, now func() time.Time) *Sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if now == nil {
		now = time.Now
	}
	return &Sessions{m: make(map[[sha256.Size]byte]session), ttl: ttl, max: max, now: now}
}

// Issue starts a session holding value and sets its cookie on w.
func (s *Sessions) Issue(w http.ResponseWriter, r *http.Request, value string) error {
	var raw [sessionIDBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	id := hex.EncodeToString(raw[:])
	now := s.now()
	exp := now.Add(s.ttl)
	s.mu.Lock()
	if len(s.m) >= s.max {
		s.evictLocked(now)
	}
	s.m[sha256.Sum256([]byte(id))] = session{value: value, expires: exp}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: "/", Expires: exp, MaxAge: int(s.ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return nil
}

// evictLocked drops expired sessions, then the one closest to expiry
// until there is room.
func (s *Sessions) evictLocked(now time.Time) {
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
		}
	}
	for len(s.m) >= s.max {
		var oldest [sha256.Size]byte
		first := true
		var at time.Time
		for k, v := range s.m {
			if first || v.expires.Before(at) {
				oldest, at, first = k, v.expires, false
			}
		}
		delete(s.m, oldest)
	}
}

// Lookup returns the value of the request's live session.
func (s *Sessions) Lookup(r *http.Request) (string, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" || len(c.Value) > maxCookieValue {
		return "", false
	}
	key := sha256.Sum256([]byte(c.Value))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return "", false
	}
	if !now.Before(v.expires) {
		delete(s.m, key)
		return "", false
	}
	return v.value, true
}

// End removes the request's session (if any) and clears its cookie.
func (s *Sessions) End(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil && len(c.Value) <= maxCookieValue {
		s.mu.Lock()
		delete(s.m, sha256.Sum256([]byte(c.Value)))
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// Len is the number of sessions held (expired ones included until evicted).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// CookieMayAuthorize reports whether a request carrying the session cookie
// may use it. Safe methods may; a change must also come from a browser
// page of this origin: Sec-Fetch-Site same-origin, or (older browsers) an
// Origin whose host is the request's Host. The APIs' cross-origin check
// already refuses foreign origins; this refuses a cookie on a change that
// carries neither header, which no same-origin fetch does.
func CookieMayAuthorize(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	host, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		host, ok = strings.CutPrefix(origin, "https://")
	}
	return ok && strings.EqualFold(host, r.Host)
}

// SignInRequest is the body of POST /api/v1/session.
type SignInRequest struct {
	Token string `json:"token"`
}

// SessionStatus is the body of GET /api/v1/session.
type SessionStatus struct {
	SignedIn bool   `json:"signedIn"`
	Server   string `json:"server"` // ql3-edge | ql3-control
	// AuthRequired is false when the server runs without a token
	// (ql3-edge --no-auth on loopback): the panel then needs no sign-in.
	AuthRequired bool `json:"authRequired"`
}

// SessionAPI serves /api/v1/session for one binary.
type SessionAPI struct {
	Sessions *Sessions
	Server   string
	// Verify checks an admin token and returns the value the session
	// keeps; a failure is returned to the client as is (401).
	Verify func(ctx context.Context, token string) (value string, err error)
	// AuthDisabled: every request is allowed, sign-in is not needed.
	AuthDisabled bool
}

// SessionPath is where the session endpoints live; requests to it need no
// credential.
const SessionPath = "/api/v1/session"

// Routes registers GET, POST and DELETE /api/v1/session.
func (a *SessionAPI) Routes(mux Mux) {
	mux.HandleFunc("GET "+SessionPath, a.status)
	mux.HandleFunc("POST "+SessionPath, a.signIn)
	mux.HandleFunc("DELETE "+SessionPath, a.signOut)
}

func (a *SessionAPI) status(w http.ResponseWriter, r *http.Request) {
	_, ok := a.Sessions.Lookup(r)
	WriteJSON(w, http.StatusOK, SessionStatus{SignedIn: ok || a.AuthDisabled, Server: a.Server, AuthRequired: !a.AuthDisabled})
}

func (a *SessionAPI) signIn(w http.ResponseWriter, r *http.Request) {
	var req SignInRequest
	if err := DecodeJSON(w, r, maxSignInBody, &req); err != nil {
		WriteError(w, err)
		return
	}
	tok := strings.TrimSpace(req.Token)
	if tok == "" {
		WriteError(w, errs.Invalidf("token", "must not be empty"))
		return
	}
	value, err := a.Verify(r.Context(), tok)
	if err != nil {
		if c := errs.Code(err); c == errs.Unauthorized || c == errs.NotFound || c == errs.Invalid {
			err = errs.E(errs.Unauthorized, "token", "this token is not valid here")
		}
		WriteError(w, err)
		return
	}
	if err := a.Sessions.Issue(w, r, value); err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, SessionStatus{SignedIn: true, Server: a.Server, AuthRequired: !a.AuthDisabled})
}

func (a *SessionAPI) signOut(w http.ResponseWriter, r *http.Request) {
	a.Sessions.End(w, r)
	w.WriteHeader(http.StatusNoContent)
}
