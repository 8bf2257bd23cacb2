// Package qlcompat is QingLong's Open API on ql3-control, scoped to a
// project (ADR 0057): an app belongs to one project, and its token
// reaches that project's crons (tasks and their triggers) only. The
// shapes and the mapping are the edge's (ADR 0048), from core/qlopen;
// the admin API mounts this handler under /open/.
//
//	GET    /open/auth/token?client_id=&client_secret=   → {code:200, data:{token, token_type, expiration}}
//	GET    /open/crons?searchValue=&page=&size=         → {data:[…], total}
//	POST   /open/crons | PUT /open/crons                {name?, command, schedule, extra_schedules?, …}
//	DELETE /open/crons                                  [ids]
//	PUT    /open/crons/run | /stop | /enable | /disable [ids]
//	GET    /open/crons/{id}, /open/crons/{id}/log
//	…      /open/envs                                   the project's env store (envs.go)
//	…      /open/scripts                                the project's scripts folder (scripts.go)
//	…      /open/logs, /open/system                     attempt logs and the system info (logs.go)
//
// Everything else under /open/ answers QingLong's 404 shape after the
// token and scope check.
package qlcompat

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/httpkit"
)

// Backend is what the Open API reads and changes: the publication and
// run-read ports (admin role), the run operations (runtime role) and the
// apps store.
type Backend interface {
	controlplane.Publication
	controlplane.RunReads
}

// Config wires a Handler.
type Config struct {
	Backend Backend
	Runs    controlplane.RunOperations // nil: run, stop and log answer 503
	Apps    controlplane.OpenApps      // nil: every route answers 503
	Envs    controlplane.EnvStore      // nil: /open/envs answers 503
	Scripts controlplane.Scripts       // nil: /open/scripts answers 503
	Logger  *slog.Logger
	Now     func() time.Time // nil: time.Now
	// TimeZone is the zone of the triggers a cron makes (QingLong's
	// schedules carry none); "" means UTC.
	TimeZone string
	// Version is what GET /open/system says.
	Version string
}

// Handler serves /open/.
type Handler struct {
	b       Backend
	runs    controlplane.RunOperations
	apps    controlplane.OpenApps
	envs    controlplane.EnvStore
	scripts controlplane.Scripts
	log     *slog.Logger
	now     func() time.Time
	zone    string
	ver     string
	limit   *httpkit.FailLimiter
	mux     *http.ServeMux
}

// New returns the handler.
func New(cfg Config) *Handler {
	h := &Handler{b: cfg.Backend, runs: cfg.Runs, apps: cfg.Apps, envs: cfg.Envs, scripts: cfg.Scripts, log: cfg.Logger, now: cfg.Now, zone: cfg.TimeZone, ver: cfg.Version,
		limit: httpkit.NewFailLimiter(qlopen.TokenFailMax, qlopen.TokenFailWindow), mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.zone == "" {
		h.zone = "UTC"
	}
	h.mux.HandleFunc("GET /open/auth/token", h.token)
	h.cronRoutes()
	h.envRoutes()
	h.logRoutes()
	h.scriptRoutes()
	h.mux.HandleFunc("/open/", h.withApp(func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "ql3-control does not serve "+r.Method+" "+r.URL.Path+" (ADR 0057 lists what the Open API maps)")
	}))
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

const maxBody = 1 << 20

func ok(w http.ResponseWriter, data any) {
	httpkit.WriteJSON(w, http.StatusOK, qlopen.Envelope{Code: 200, Data: data})
}

// fail answers QingLong's error shape: the HTTP status is the code.
func fail(w http.ResponseWriter, status int, msg string) {
	httpkit.WriteJSON(w, status, qlopen.Envelope{Code: status, Message: msg})
}

// fault maps a coded error to QingLong's shape (as the edge does): bad
// input, conflicts and missing rows 400, unavailable 503, else 500.
func (h *Handler) fault(w http.ResponseWriter, r *http.Request, err error) {
	body, internal := errs.Public(err)
	switch body.Code {
	case errs.Invalid, errs.Conflict, errs.NotFound, errs.TooLarge:
		msg := body.Message
		if body.Field != "" {
			msg = body.Field + ": " + msg
		}
		fail(w, http.StatusBadRequest, msg)
	case errs.Unauthorized:
		fail(w, http.StatusUnauthorized, body.Message)
	case errs.Unavailable:
		h.log.WarnContext(r.Context(), "open api unavailable", "path", r.URL.Path, "err", err)
		fail(w, http.StatusServiceUnavailable, body.Message)
	default:
		if internal {
			h.log.ErrorContext(r.Context(), "open api request failed", "path", r.URL.Path, "err", err)
		}
		fail(w, http.StatusInternalServerError, "internal error")
	}
}

type appKey struct{}

func appOf(r *http.Request) controlplane.OpenApp {
	a, _ := r.Context().Value(appKey{}).(controlplane.OpenApp)
	return a
}

// withApp authenticates an app token and checks its scope (the first
// path segment after /open/, as QingLong does); the request's mutations
// are audited as "app:<name>".
func (h *Handler) withApp(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.apps == nil || h.b == nil {
			fail(w, http.StatusServiceUnavailable, "this server has no Open API store")
			return
		}
		tok := bearer(r)
		if tok == "" {
			fail(w, http.StatusUnauthorized, "please sign in: this request needs an app token (Authorization: Bearer …)")
			return
		}
		d := sha256.Sum256([]byte(tok))
		app, err := h.apps.OpenTokenApp(r.Context(), d[:], h.now().UnixMilli())
		if err != nil {
			if errs.Code(err) == errs.Unauthorized {
				fail(w, http.StatusUnauthorized, "token expired or invalid")
			} else {
				h.fault(w, r, err)
			}
			return
		}
		seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/open/"), "/")
		if !slices.Contains(app.Scopes, seg) {
			fail(w, http.StatusUnauthorized, "no permission: this app's scopes do not include "+seg)
			return
		}
		ctx := controlplane.WithActor(r.Context(), controlplane.Actor{Kind: "admin", ID: "app:" + app.Name, RemoteAddr: peerIP(r)})
		next(w, r.WithContext(context.WithValue(ctx, appKey{}, app)))
	}
}

func bearer(r *http.Request) string {
	scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	if tok = strings.TrimSpace(tok); len(tok) > 256 {
		return ""
	}
	return tok
}

func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// token issues an app token. Like QingLong it answers HTTP 200 with code
// 400 for a wrong client_id/secret; failures are counted per peer and a
// peer over the limit gets 429.
func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	if h.apps == nil {
		fail(w, http.StatusServiceUnavailable, "this server has no Open API store")
		return
	}
	peer, now := peerIP(r), h.now()
	if !h.limit.Allow(peer, now) {
		w.Header().Set("Retry-After", "60")
		fail(w, http.StatusTooManyRequests, "too many failed token requests from this address; try again later")
		return
	}
	q := r.URL.Query()
	id, secret := q.Get("client_id"), q.Get("client_secret")
	if id == "" || secret == "" || len(id) > 64 || len(secret) > 128 {
		fail(w, http.StatusBadRequest, "client_id and client_secret are required")
		return
	}
	app, digest, err := h.apps.OpenAppByClient(r.Context(), id)
	want := sha256.Sum256([]byte(secret))
	if errs.Code(err) == errs.NotFound || (err == nil && subtle.ConstantTimeCompare(digest, want[:]) != 1) {
		h.limit.Fail(peer, now)
		h.log.InfoContext(r.Context(), "open api token refused", "peer", peer)
		httpkit.WriteJSON(w, http.StatusOK, qlopen.Envelope{Code: 400, Message: "client_id or client_secret is wrong"})
		return
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	tok, err := qlopen.RandomAlnum(48)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	exp := now.Add(qlopen.TokenTTL)
	d := sha256.Sum256([]byte(tok))
	if err := h.apps.IssueOpenToken(r.Context(), app.ID, d[:], now.UnixMilli(), exp.UnixMilli()); err != nil {
		h.fault(w, r, err)
		return
	}
	h.log.InfoContext(r.Context(), "open api token issued", "app", app.Name, "project", app.ProjectID)
	ok(w, qlopen.Token{Token: tok, TokenType: "Bearer", Expiration: exp.Unix()})
}

// decode reads a JSON body strictly into v (httpkit.DecodeValue), bounded.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	return httpkit.DecodeValue(w, r, maxBody, v)
}

// decodeIDs decodes QingLong's array of numeric ids, bounded.
func decodeIDs(w http.ResponseWriter, r *http.Request) ([]int64, error) {
	return httpkit.DecodeIDs(w, r, maxBody, controlplane.MaxListLimit)
}

// resolve maps numbers of kind in the app's project to ql3 ids; an
// unknown number is refused.
func (h *Handler) resolve(r *http.Request, kind string, nums []int64) ([]string, error) {
	refs, err := h.apps.OpenRefs(r.Context(), appOf(r).ProjectID, kind, nums)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(nums))
	for i, n := range nums {
		ref, found := refs[n]
		if !found {
			return nil, errs.NotFoundf("no %s with id %d", kind, n)
		}
		out[i] = ref
	}
	return out, nil
}
