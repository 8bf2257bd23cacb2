package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// The QingLong-compatible Open API (ADR 0048). Tools written for QingLong
// 2.x (cookie refreshers, bots, phone apps) call these routes with an app's
// bearer token; they answer QingLong's envelope {code, data, message}
// with QingLong's status codes. The routes, bodies and answers follow
// QingLong's back/api/open.ts, env.ts and cron.ts, its auth middleware in
// back/loaders/express.ts and its services (back/services/open.ts, env.ts,
// cron.ts); the mapping to ql3's model is ADR 0048.
//
//	GET    /open/auth/token?client_id=&client_secret=   → {code:200, data:{token, token_type, expiration}}
//	GET    /open/envs?searchValue=                      values included, every read audited
//	POST   /open/envs                                   [{name, value, remarks?, labels?}]
//	PUT    /open/envs                                   {id, name, value, remarks?, labels?}
//	DELETE /open/envs                                   [ids]
//	PUT    /open/envs/enable | /disable | /pin | /unpin [ids]
//	PUT    /open/envs/name                              {ids, name}
//	PUT    /open/envs/{id}/move                         {fromIndex, toIndex}
//	GET    /open/envs/{id}
//	GET    /open/crons?searchValue=&page=&size=         → {data:[…], total}
//	POST   /open/crons | PUT /open/crons                {name?, command, schedule, extra_schedules?, …}
//	DELETE /open/crons                                  [ids]
//	PUT    /open/crons/run | /stop | /enable | /disable [ids]
//	GET    /open/crons/{id}, /open/crons/{id}/log
//
// /open/scripts, /open/logs and /open/system are ADR 0057's
// (open_scripts.go, open_logs.go, open_system.go). Everything else under
// /open/ (configs, dependencies, subscriptions, …) answers QingLong's 404
// shape: ql3-edge does not serve it.

// OpenTokenTTL is how long an app token lives (QingLong: 30 days).
const OpenTokenTTL = qlopen.TokenTTL

// openMaxBody bounds an Open API body (a create of many env entries).
const openMaxBody = 1 << 20

// openEnvelope is QingLong's answer shape; OpenToken data of a token.
type (
	openEnvelope = qlopen.Envelope
	OpenToken    = qlopen.Token
)

func openOK(w http.ResponseWriter, data any) {
	httpkit.WriteJSON(w, http.StatusOK, openEnvelope{Code: 200, Data: data})
}

// openFail answers QingLong's error shape: the HTTP status is the code.
func openFail(w http.ResponseWriter, status int, msg string) {
	httpkit.WriteJSON(w, status, openEnvelope{Code: status, Message: msg})
}

// openErr maps a coded error to QingLong's shape: invalid input, conflicts
// and missing rows are its 400 (QingLong answers these with code 400),
// a locked store 503, anything else 500 without detail.
func (s *Server) openErr(w http.ResponseWriter, r *http.Request, err error) {
	body, internal := errs.Public(err)
	switch body.Code {
	case errs.Invalid, errs.Conflict, errs.NotFound, errs.TooLarge:
		msg := body.Message
		if body.Field != "" {
			msg = body.Field + ": " + msg
		}
		openFail(w, http.StatusBadRequest, msg)
	case errs.Unauthorized:
		openFail(w, http.StatusUnauthorized, body.Message)
	case errs.Unavailable:
		s.log.WarnContext(r.Context(), "open api unavailable", "path", r.URL.Path, "err", err)
		openFail(w, http.StatusServiceUnavailable, body.Message)
	default:
		if internal {
			s.log.ErrorContext(r.Context(), "open api request failed", "path", r.URL.Path, "err", err)
		}
		openFail(w, http.StatusInternalServerError, "internal error")
	}
}

func (s *Server) openRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/auth/token", s.openToken)
	s.openEnvRoutes(mux)
	s.openCronRoutes(mux)
	s.openScriptRoutes(mux) // ADR 0057
	s.openLogRoutes(mux)
	s.openSystemRoutes(mux)
	mux.HandleFunc("/open/", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.openApp(w, r); !ok {
			return
		}
		openFail(w, http.StatusNotFound, "ql3-edge does not serve "+r.Method+" "+r.URL.Path+" (ADR 0048 lists what the Open API maps)")
	})
}

type openAppKey struct{}

// withApp authenticates an app token and checks its scope (the first path
// segment after /open/, as QingLong does) before h runs.
func (s *Server) withApp(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app, ok := s.openApp(w, r)
		if !ok {
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), openAppKey{}, app)))
	}
}

func appOf(r *http.Request) edge.OpenApp {
	a, _ := r.Context().Value(openAppKey{}).(edge.OpenApp)
	return a
}

// openApp answers QingLong's 401 shape for a missing, unknown or expired
// token and for a scope the app lacks.
func (s *Server) openApp(w http.ResponseWriter, r *http.Request) (edge.OpenApp, bool) {
	if s.access == nil {
		openFail(w, http.StatusServiceUnavailable, "this server has no Open API store")
		return edge.OpenApp{}, false
	}
	tok := bearer(r)
	if tok == "" {
		openFail(w, http.StatusUnauthorized, "please sign in: this request needs an app token (Authorization: Bearer …)")
		return edge.OpenApp{}, false
	}
	d := sha256.Sum256([]byte(tok))
	app, err := s.access.OpenTokenApp(r.Context(), d[:], s.now().UnixMilli())
	if err != nil {
		if errs.Code(err) == errs.Unauthorized {
			openFail(w, http.StatusUnauthorized, "token expired or invalid")
		} else {
			s.openErr(w, r, err)
		}
		return edge.OpenApp{}, false
	}
	seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/open/"), "/")
	if !slices.Contains(app.Scopes, seg) {
		openFail(w, http.StatusUnauthorized, "no permission: this app's scopes do not include "+seg)
		return edge.OpenApp{}, false
	}
	return app, true
}

// bearer returns the token of "Authorization: Bearer <token>" ("" if none).
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	tok = strings.TrimSpace(tok)
	if len(tok) > maxTokenLength {
		return ""
	}
	return tok
}

// openToken issues an app token. Like QingLong it answers HTTP 200 with
// code 400 for a wrong client_id/secret; unlike QingLong it counts those
// failures per peer and answers 429 while a peer is over the limit.
func (s *Server) openToken(w http.ResponseWriter, r *http.Request) {
	if s.access == nil {
		openFail(w, http.StatusServiceUnavailable, "this server has no Open API store")
		return
	}
	peer := peerIP(r)
	now := s.now()
	if !s.openLimit.Allow(peer, now) {
		w.Header().Set("Retry-After", "60")
		openFail(w, http.StatusTooManyRequests, "too many failed token requests from this address; try again later")
		return
	}
	q := r.URL.Query()
	id, secret := q.Get("client_id"), q.Get("client_secret")
	if id == "" || secret == "" || len(id) > 64 || len(secret) > 128 {
		openFail(w, http.StatusBadRequest, "client_id and client_secret are required")
		return
	}
	app, digest, err := s.access.OpenAppByClient(r.Context(), id)
	want := sha256.Sum256([]byte(secret))
	if errs.Code(err) == errs.NotFound || (err == nil && subtle.ConstantTimeCompare(digest, want[:]) != 1) {
		s.openLimit.Fail(peer, now)
		s.log.InfoContext(r.Context(), "open api token refused", "peer", peer)
		httpkit.WriteJSON(w, http.StatusOK, openEnvelope{Code: 400, Message: "client_id or client_secret is wrong"})
		return
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	tok, err := randomHex(24)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	exp := now.Add(OpenTokenTTL)
	d := sha256.Sum256([]byte(tok))
	if err := s.access.IssueOpenToken(r.Context(), app.ID, d[:], now.UnixMilli(), exp.UnixMilli()); err != nil {
		s.openErr(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "open api token issued", "app", app.Name)
	openOK(w, OpenToken{Token: tok, TokenType: "Bearer", Expiration: exp.Unix()})
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// peerIP is the request's peer address without the port.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// decodeOpen reads a JSON body strictly into v (httpkit.DecodeValue), bounded.
func decodeOpen(w http.ResponseWriter, r *http.Request, v any) error {
	return httpkit.DecodeValue(w, r, openMaxBody, v)
}

// decodeOpenIDs decodes QingLong's array of numeric ids, bounded.
func decodeOpenIDs(w http.ResponseWriter, r *http.Request) ([]int64, error) {
	return httpkit.DecodeIDs(w, r, openMaxBody, edge.MaxPageSize)
}

// resolveOpen maps numeric ids of kind to ql3 ids; an unknown number is
// refused (QingLong would ignore it silently).
func (s *Server) resolveOpen(ctx context.Context, kind string, nums []int64) ([]string, error) {
	refs, err := s.access.OpenRefs(ctx, kind, nums)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(nums))
	for i, n := range nums {
		ref, ok := refs[n]
		if !ok {
			return nil, errs.NotFoundf("no %s with id %d", kind, n)
		}
		out[i] = ref
	}
	return out, nil
}
