// Package adminapi is ql3-control's admin HTTP API (default 127.0.0.1:5800): JSON over
// net/http with the standard ServeMux, bearer API tokens, strict bodies.
//
// Routes (all under /api/v1 except health):
//
//	GET  /healthz, /readyz                              open; readiness checks the schema
//	GET  /metrics                                       Prometheus text: loopback without a token, else an API token
//	GET  /, /panel/app.js, /panel/app.css               the web panel (module panel), open
//	GET|POST|DELETE /api/v1/session                     panel session: status, sign in {token}, sign out (open)
//	GET  /api/v1/schedule/preview                       (?expression=&timeZone=&count=&afterMs=)
//	GET  /api/v1/openapi.json                           this API's OpenAPI 3.1 document
//	GET  /api/v1/projects                               list (?limit=&cursor=)
//	POST /api/v1/projects                               create
//	GET  /api/v1/projects/{project}                     by id or name
//	POST /api/v1/projects/{project}/archive             archive ({expectedVersion})
//	GET  /api/v1/tasks                                  list (?project=&q=&limit=&cursor=; q searches name, command, labels)
//	POST /api/v1/tasks                                  create (project, name, spec)
//	GET  /api/v1/tasks/{task}                           one task with its triggers
//	PUT  /api/v1/tasks/{task}                           update (expectedRevision) → new revision
//	PATCH /api/v1/tasks/{task}                          {"enabled": bool}
//	POST /api/v1/tasks/{task}/enable | /disable
//	GET  /api/v1/tasks/{task}/triggers                  list
//	POST /api/v1/tasks/{task}/triggers                  create
//	GET  /api/v1/tasks/{task}/triggers/{trigger}
//	PUT  /api/v1/tasks/{task}/triggers/{trigger}        update (expectedRevision) → new revision
//	GET  /api/v1/runs                                   list, newest first (?project=&task=&trigger=&status=a,b&origin=&limit=&cursor=)
//	GET  /api/v1/runs/{run}                             one run with its attempts
//	GET  /api/v1/runs/{run}/events                      (?after=&limit=)
//	GET  /api/v1/workers                                list
//	POST /api/v1/workers                                register
//	GET  /api/v1/workers/{worker}                       by id or name
//	GET  /api/v1/workers/{worker}/credentials           list (never secrets or digests)
//	POST /api/v1/workers/{worker}/credentials           issue: the credential text is in this response only
//	POST /api/v1/workers/{worker}/credentials/rotate    issue a new one, retire the others ({graceMs})
//	POST /api/v1/workers/{worker}/credentials/{credential}/revoke
//	GET  /api/v1/audit                                  audit lines, newest first (?action=&subject=&actor=&limit=&cursor=)
//	…    /api/v1/notify/channels|rules|deliveries        notifications (notify.go)
//	GET  /api/v1/overview                               tasks, runs by status, failures of 24 h, next fires, workers (?project=)
//	GET|POST /api/v1/views, DELETE /api/v1/views/{view} a project's saved task filters (taskfind.go)
//	GET|POST /api/v1/apps, DELETE /api/v1/apps/{app}    QingLong Open API apps (apps.go); /open/… their API (ADR 0057)
//
// The task, trigger, run and error shapes are the edge API's (edge/httpapi)
// plus the cluster's own fields (projectId, executionRevisionId, …), so one
// client can read both. Publications accept an optional mutationId: an
// identical retry returns the original result, a different request under
// the same id is 409. Errors are {code, message, field} with 400, 401, 404,
// 409, 413, 503 or 500.
package adminapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/accessapi"
	"github.com/ql3/ql3/controlplane/depapi"
	"github.com/ql3/ql3/controlplane/importapi"
	"github.com/ql3/ql3/controlplane/subapi"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/httpkit"
)

// Backend is what the API needs from storage on the admin role: the
// control plane's publication, run-read, worker, authentication and audit
// ports (postgres/publication.Publisher implements them; app wires it in).
type Backend interface {
	controlplane.Publication
	controlplane.RunReads
	controlplane.Workers
	controlplane.Authentication
	controlplane.AuditLog
	controlplane.Overviews
	controlplane.TaskFinding
}

// DefaultMaxBodyBytes bounds request bodies: room for a task spec at its
// input limit plus the envelope around it.
const DefaultMaxBodyBytes = spec.MaxInputBytes + 4<<10

// Config wires a Server.
type Config struct {
	Backend      Backend
	Logger       *slog.Logger
	Version      string
	MaxBodyBytes int // default DefaultMaxBodyBytes
	// Ready reports whether the process can serve (database reachable,
	// schema exactly the binary's); nil means always ready.
	Ready func(ctx context.Context) error
	Queue func(ctx context.Context) *controlplane.QueueHealth // /readyz's overload detail (ADR 0066); nil: left out
	// Now is the clock for access-log durations; nil means time.Now.
	Now func() time.Time
	// Runs is the runtime-role port for cancel, run-now, logs and wait
	// reasons (controlplane.RunOperations); nil answers those routes 503.
	Runs RunControl
	// DisableWorker disables a worker (on the admin pool); nil answers that route 503.
	DisableWorker WorkerControl
	// Metrics writes the process's families into GET /metrics; nil serves
	// the HTTP statistics only.
	Metrics Collector
	// Sessions holds the panel's browser sessions; nil means a fresh table.
	Sessions *httpkit.Sessions
	// UI is the browser front end served beside the API (the app passes
	// the web panel, module panel); nil serves the API alone.
	UI httpkit.UI
	// Envs is the projects' env store (envs.go); nil answers those routes 503.
	Envs controlplane.EnvStore
	// Scripts is the projects' scripts folders (ADR 0052); nil answers
	// those routes 503.
	Scripts       controlplane.Scripts
	Subscriptions controlplane.Subscriptions // a project's subscriptions (subapi, ADR 0061); nil answers 503
	// Notify holds the notification ports (notify.go); zero answers 503.
	Notify NotifyPorts
	// Apps stores QingLong's Open API apps (/api/v1/apps) and Open serves
	// /open/ (controlplane/qlcompat, ADR 0057); nil answers them 503.
	Apps controlplane.OpenApps
	Open http.Handler
	// Tokens creates, lists and revokes scoped API tokens (accessapi, ADR
	// 0060); nil answers /api/v1/tokens 503.
	Tokens controlplane.APITokens
	// Accounts stores accounts and the sign-in log (accessapi, ADR
	// 0060); nil answers /api/v1/users, /api/v1/signins and the password
	// sign-in 503.
	Accounts controlplane.Accounts
	// Deps stores the projects' dependencies (depapi, ADR 0062); nil
	// answers those routes 503.
	Deps controlplane.Dependencies
	// Imports is the QingLong import (importapi, ADR 0063); nil answers 503.
	Imports controlplane.Imports
}

// Server is the admin API handler.
type Server struct {
	runs     RunControl
	disable  WorkerControl
	b        Backend
	log      *slog.Logger
	version  string
	maxBody  int
	ready    func(ctx context.Context) error
	queue    func(ctx context.Context) *controlplane.QueueHealth
	now      func() time.Time
	sessions *httpkit.Sessions
	ui       httpkit.UI
	envs     controlplane.EnvStore
	notify   NotifyPorts
	handler  http.Handler
	scripts  controlplane.Scripts
	subs     *subapi.API
	apps     controlplane.OpenApps
	open     http.Handler
	access   *accessapi.API
	depAPI   *depapi.API
	imports  controlplane.Imports

	collect   Collector
	httpStats *metrics.HTTPStats
	patterns  []string // every ServeMux pattern registered, in order
}

// New returns the API handler.
func New(cfg Config) *Server {
	s := &Server{runs: cfg.Runs, disable: cfg.DisableWorker, b: cfg.Backend, log: cfg.Logger, version: cfg.Version, maxBody: cfg.MaxBodyBytes, ready: cfg.Ready, queue: cfg.Queue, now: cfg.Now,
		collect: cfg.Metrics, httpStats: metrics.NewHTTPStats(), ui: cfg.UI, envs: cfg.Envs, scripts: cfg.Scripts, notify: cfg.Notify, apps: cfg.Apps, open: cfg.Open}
	s.imports = cfg.Imports
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.subs = subapi.New(subapi.Config{Subs: cfg.Subscriptions, Backend: cfg.Backend, Actor: actorID, Logger: s.log})
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.sessions = cfg.Sessions
	if s.sessions == nil {
		s.sessions = httpkit.NewSessions(0, 0, s.now)
	}
	s.depAPI = depapi.New(depapi.Config{Deps: cfg.Deps, Backend: cfg.Backend, Runs: cfg.Runs, Actor: actorID, MaxBody: s.maxBody, Logger: s.log})
	s.access = accessapi.New(accessapi.Config{Tokens: cfg.Tokens, Accounts: cfg.Accounts, Sessions: s.sessions, Now: s.now, Logger: s.log})
	mux := http.NewServeMux()
	rec := &httpkit.PatternRecorder{Mux: mux}
	s.routes(rec)
	s.patterns = rec.Patterns
	s.handler = s.wrap(mux)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) routes(mux httpkit.Mux) {
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET "+MetricsPath, s.metricsHandler)
	mux.HandleFunc("GET "+OpenAPIPath, s.openAPI)

	mux.HandleFunc("GET /api/v1/projects", s.listProjects)
	mux.HandleFunc("POST /api/v1/projects", s.createProject)
	mux.HandleFunc("GET /api/v1/projects/{project}", s.getProject)
	mux.HandleFunc("POST /api/v1/projects/{project}/archive", s.archiveProject)

	mux.HandleFunc("GET /api/v1/tasks", s.listTasks)
	mux.HandleFunc("POST /api/v1/tasks", s.createTask)
	mux.HandleFunc("GET /api/v1/tasks/{task}", s.getTask)
	mux.HandleFunc("PUT /api/v1/tasks/{task}", s.updateTask)
	mux.HandleFunc("PATCH /api/v1/tasks/{task}", s.patchTask)
	mux.HandleFunc("POST /api/v1/tasks/{task}/enable", s.setEnabled(true))
	mux.HandleFunc("POST /api/v1/tasks/{task}/disable", s.setEnabled(false))

	mux.HandleFunc("GET /api/v1/tasks/{task}/triggers", s.listTriggers)
	mux.HandleFunc("POST /api/v1/tasks/{task}/triggers", s.createTrigger)
	mux.HandleFunc("GET /api/v1/tasks/{task}/triggers/{trigger}", s.getTrigger)
	mux.HandleFunc("PUT /api/v1/tasks/{task}/triggers/{trigger}", s.updateTrigger)

	mux.HandleFunc("GET /api/v1/runs", s.listRuns)
	mux.HandleFunc("GET /api/v1/runs/{run}", s.getRun)
	mux.HandleFunc("GET /api/v1/runs/{run}/events", s.listEvents)

	mux.HandleFunc("GET /api/v1/workers", s.listWorkers)
	mux.HandleFunc("POST /api/v1/workers", s.registerWorker)
	mux.HandleFunc("GET /api/v1/workers/{worker}", s.getWorker)
	mux.HandleFunc("GET /api/v1/workers/{worker}/credentials", s.listCredentials)
	mux.HandleFunc("POST /api/v1/workers/{worker}/credentials", s.issueCredential)
	mux.HandleFunc("POST /api/v1/workers/{worker}/credentials/rotate", s.rotateCredentials)
	mux.HandleFunc("POST /api/v1/workers/{worker}/credentials/{credential}/revoke", s.revokeCredential)

	mux.HandleFunc("GET /api/v1/audit", s.listAudit)
	mux.HandleFunc("GET /api/v1/overview", s.overview)
	mux.HandleFunc("GET /api/v1/views", s.listViews)
	mux.HandleFunc("POST /api/v1/views", s.createView)
	mux.HandleFunc("DELETE /api/v1/views/{view}", s.deleteView)

	s.lifecycleRoutes(mux)
	s.envRoutes(mux)
	s.panelRoutes(mux)
	s.scriptRoutes(mux)
	s.subs.Routes(mux)
	s.notifyRoutes(mux)
	s.appRoutes(mux)     // apps.go: /api/v1/apps and /open/ (ADR 0057)
	s.access.Routes(mux) // accessapi: scoped tokens, accounts, password sign-in (ADR 0060)
	s.depAPI.Routes(mux) // depapi: a project's dependencies (ADR 0062)
	importapi.New(importapi.Config{Imports: s.imports, Projects: s.b, MaxBodyBytes: s.maxBody, Logger: s.log}).Routes(mux)

	// Everything else is a JSON 404, not the mux's text one.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errs.NotFoundf("no route for %s %s", r.Method, r.URL.Path))
	})
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status  string                    `json:"status"` // ok | unavailable
	Version string                    `json:"version,omitempty"`
	Error   string                    `json:"error,omitempty"`
	Queue   *controlplane.QueueHealth `json:"queue,omitempty"` // overload detail (ADR 0066); ready stays true
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	httpkit.WriteJSON(w, http.StatusOK, Health{Status: "ok", Version: s.version})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			s.log.WarnContext(r.Context(), "not ready", "err", err)
			// The reason (schema behind, too new, tampered) is safe to show:
			// it names versions, never data.
			msg := "not ready"
			var se *controlplane.SchemaError
			if errors.As(err, &se) {
				msg = se.Error()
			}
			httpkit.WriteJSON(w, http.StatusServiceUnavailable, Health{Status: "unavailable", Version: s.version, Error: msg})
			return
		}
	}
	h := Health{Status: "ok", Version: s.version}
	if s.queue != nil {
		h.Queue = s.queue(r.Context())
	}
	httpkit.WriteJSON(w, http.StatusOK, h)
}

type tokenKey struct{}

// crossOrigin refuses browser requests with side effects from another
// origin (Sec-Fetch-Site, else Origin against Host) whatever their
// credentials; non-browser clients send neither header and pass. JSON
// bodies must also carry Content-Type: application/json (httpkit.ReadBody), so a
// cross-site "simple" request without a preflight never decodes.
var crossOrigin = http.NewCrossOriginProtection()

// wrap applies, outermost first: panic recovery, access log, auth. The
// access log records method, path, status and the token id, never the
// token or the query string.
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		rec := &httpkit.StatusRecorder{ResponseWriter: w}
		tokenID := ""
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rec.Status == 0 {
					s.fail(rec, r, errs.E(errs.Internal, "", "internal error"))
				}
			}
			took := s.now().Sub(start)
			// r.Pattern is the ServeMux pattern matched (set on this
			// request by the mux): bounded series, never raw paths.
			s.httpStats.Observe(metrics.Route(r.Pattern), r.Method, rec.Status, took)
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", r.Pattern),
				slog.Int("status", rec.Status), slog.String("token", tokenID), slog.Duration("took", took))
		}()
		w.Header().Set("Cache-Control", "no-store")
		if err := crossOrigin.Check(r); err != nil {
			s.fail(rec, r, errs.E(errs.Forbidden, "Origin", "cross-origin request refused: a change must come from this server's own origin or from a non-browser client"))
			return
		}
		if !s.isOpenPath(r.URL.Path) && !scrapeFromLoopback(r) {
			tok, err := s.authenticate(r)
			if err != nil {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="ql3-control"`)
				s.fail(rec, r, err)
				return
			}
			tokenID = tok.ID
			if err := accessapi.Authorize(tok, r); err != nil {
				s.fail(rec, r, err)
				return
			}
			// Every mutation made for this request writes its audit line
			// as this token (id only) from this peer.
			ctx := controlplane.WithActor(r.Context(), controlplane.Actor{Kind: "admin", ID: tok.ID, RemoteAddr: r.RemoteAddr})
			r = r.WithContext(context.WithValue(ctx, tokenKey{}, tok))
		}
		next.ServeHTTP(rec, r)
	})
}

func (s *Server) authenticate(r *http.Request) (controlplane.APIToken, error) {
	if tok, ok, err := s.sessionToken(r); err != nil {
		return controlplane.APIToken{}, err
	} else if ok {
		if acct, ok, err := s.access.AccountSession(r.Context(), tok); ok {
			return acct, err
		}
		return s.b.AuthenticateAPIToken(r.Context(), tok)
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return controlplane.APIToken{}, errs.E(errs.Unauthorized, "Authorization", "this API needs an API token (Authorization: Bearer ql3c_...)")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return controlplane.APIToken{}, errs.E(errs.Unauthorized, "Authorization", "expected a Bearer token")
	}
	return s.b.AuthenticateAPIToken(r.Context(), strings.TrimSpace(tok))
}
