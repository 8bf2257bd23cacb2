// Package httpapi is ql3-edge's JSON HTTP API (and its small read-only web
// panel), served with net/http and the standard ServeMux.
//
// Routes (all under /api/v1 except health and the panel):
//
//	GET    /healthz, /readyz
//	GET    /metrics                                    Prometheus text (loopback, or the admin token)
//	GET    /, /panel/app.js, /panel/app.css            the web panel (module panel)
//	GET    /api/v1/openapi.json                        this API's OpenAPI 3.1 document
//	GET    /api/v1/session                             {signedIn, server, authRequired}
//	POST   /api/v1/session                             sign in {token} → HttpOnly session cookie
//	DELETE /api/v1/session                             sign out
//	GET    /api/v1/schedule/preview                    (?expression=&timeZone=&count=&afterMs=)
//	GET    /api/v1/tasks                                list (?q=&label=&enabled=&limit=&cursor=&deleted=1; rows with triggers and last run)
//	POST   /api/v1/tasks                                create (spec + optional triggers)
//	GET    /api/v1/tasks/{task}                         one task with its triggers
//	PUT    /api/v1/tasks/{task}                         update (expectedRevision) → new revision
//	PATCH  /api/v1/tasks/{task}                         {"enabled": bool}
//	POST   /api/v1/tasks/{task}/enable | /disable
//	DELETE /api/v1/tasks/{task}
//	GET    /api/v1/tasks/{task}/triggers                list
//	POST   /api/v1/tasks/{task}/triggers                create
//	GET    /api/v1/tasks/{task}/triggers/{trigger}
//	PUT    /api/v1/tasks/{task}/triggers/{trigger}      update (expectedRevision) → new revision
//	DELETE /api/v1/tasks/{task}/triggers/{trigger}
//	POST   /api/v1/tasks/{task}/runs                    run now (Idempotency-Key header or body)
//	GET    /api/v1/runs                                 list (?task=&trigger=&status=a,b&origin=&limit=&cursor=)
//	GET    /api/v1/runs/{run}                           one run with its attempts
//	GET    /api/v1/runs/{run}/events                    (?after=&limit=)
//	POST   /api/v1/runs/{run}/cancel
//	GET    /api/v1/runs/{run}/attempts/{n}/log          (?offset=&limit=&follow=1) raw bytes
//	…      /api/v1/envs…, /api/v1/audit                 the env store (envs.go)
//	…      /api/v1/tokens…, /api/v1/apps…, /api/v1/users…, /api/v1/signins,
//	       POST /api/v1/session/password                scoped tokens, Open API apps, accounts (access.go)
//	…      /open/…                                      the QingLong-compatible Open API (open.go)
//	GET    /api/v1/overview                             counts by status, failures of 24 h, next fires (find.go)
//	GET    /api/v1/views, POST, DELETE …/{view}          saved task filters (find.go)
//	…      /api/v1/scripts…                             the scripts folder (scripts.go)
//
// {task} is a task id or the name of a live task. Errors are JSON
// {code, message, field} (see ErrorBody) with the status from Status.
// Authentication is described on Auth.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/ql3/ql3/core/metrics"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/importer"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/worker/clock"
)

// Config wires a Server.
type Config struct {
	Store        edge.Store
	Logs         *logstore.Store
	Auth         Auth
	Logger       *slog.Logger
	Clock        clock.Clock // default clock.Real
	MaxBodyBytes int         // default DefaultMaxBodyBytes
	Version      string
	// DefaultGraceMs is the misfire grace of triggers created or updated
	// without one; 0 means schedule.DefaultEdgeGraceMs.
	DefaultGraceMs int64
	// Sessions holds the panel's browser sessions; nil means a fresh table.
	Sessions *httpkit.Sessions
	// UI is the browser front end served beside the API (the app passes
	// the web panel, module panel); nil serves the API alone.
	UI httpkit.UI
	// Ready reports whether the process can serve (store open, scheduler
	// and runner started); nil means always ready.
	Ready func(ctx context.Context) error
	// Containment describes how attempts are contained (shown by /readyz).
	Containment string
	// Metrics writes the process's families into GET /metrics (scheduler,
	// runner, store); nil serves the HTTP statistics only.
	Metrics Collector
	// OnRequest, when set, is called as each request starts (the app's
	// idle detection); it must be cheap.
	OnRequest func()
	// Envs is the env store (ADR 0038); nil answers its routes with 503.
	Envs edge.EnvStore
	// RotateEnvKey re-wraps the env data key under a new key file.
	RotateEnvKey RotateKeyFunc
	// Notify serves /api/v1/notify (notify.go); nil answers 503.
	Notify *NotifyConfig
	// Access keeps Open API apps, scoped API tokens and accounts (ADR
	// 0048, 0049); nil answers their routes with 503 and accepts only the
	// admin token.
	Access edge.AccessStore
	// OpenTimeZone is the IANA zone of triggers the Open API creates
	// (QingLong schedules have none); "" means UTC.
	OpenTimeZone string
	// Scripts is the scripts folder (ADR 0044); nil answers its routes
	// with 503. Audit receives a line per change (the store; nil: none).
	Scripts *scripts.Folder
	Audit   edge.AuditAppender
	// Interpreters is the server's script interpreter table; a script task
	// with an extension it has no entry for is refused at publish (nil:
	// not checked here, the start fails instead).
	Interpreters scriptpath.Interpreters
	// Subs serves subscriptions and dependencies (ADR 0054, 0055); nil
	// answers their routes with 503.
	Subs *SubsConfig
	// Import serves /api/v1/import (ADR 0056); nil answers 503.
	Import *importer.Service
}

// Server is the HTTP handler of the API.
type Server struct {
	store    edge.Store
	logs     *logstore.Store
	auth     Auth
	log      *slog.Logger
	clock    func() time.Time
	maxBody  int
	version  string
	ready    func(ctx context.Context) error
	grace    int64
	sessions *httpkit.Sessions
	ui       httpkit.UI
	handler  http.Handler

	containment string // Config.Containment

	onReq     func()
	collect   Collector
	httpStats *metrics.HTTPStats
	patterns  []string // every ServeMux pattern registered, in order

	envs      edge.EnvStore
	rotateKey RotateKeyFunc
	notify    *NotifyConfig

	access      edge.AccessStore
	openZone    string
	openLimit   *failLimiter // failed GET /open/auth/token per peer
	signinLimit *failLimiter // failed password sign-ins per peer
	signinMu    chan struct{}
	scripts     *scripts.Folder
	auditLog    edge.AuditAppender
	interps     scriptpath.Interpreters
	subs        *SubsConfig
	imports     *importer.Service
}

// New returns the API handler.
func New(cfg Config) *Server {
	s := &Server{
		store: cfg.Store, logs: cfg.Logs, auth: cfg.Auth, log: cfg.Logger,
		maxBody: cfg.MaxBodyBytes, version: cfg.Version, ready: cfg.Ready, grace: cfg.DefaultGraceMs,
		collect: cfg.Metrics, httpStats: metrics.NewHTTPStats(), containment: cfg.Containment,
		onReq: cfg.OnRequest, ui: cfg.UI,
		envs: cfg.Envs, rotateKey: cfg.RotateEnvKey, notify: cfg.Notify,
		access: cfg.Access, openZone: cfg.OpenTimeZone,
		scripts: cfg.Scripts, auditLog: cfg.Audit, interps: cfg.Interpreters,
		subs:    cfg.Subs,
		imports: cfg.Import,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	c := cfg.Clock
	if c == nil {
		c = clock.Real{}
	}
	s.clock = c.Now
	s.sessions = cfg.Sessions
	if s.sessions == nil {
		s.sessions = httpkit.NewSessions(0, 0, s.clock)
	}
	s.initAccess()
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
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
	mux.HandleFunc("GET /metrics", s.metricsHandler)
	mux.HandleFunc("GET "+OpenAPIPath, httpkit.ServeGzipDocument(openAPIDocumentGzip))
	s.panelRoutes(mux)

	mux.HandleFunc("GET /api/v1/tasks", s.listTasks)
	mux.HandleFunc("POST /api/v1/tasks", s.createTask)
	mux.HandleFunc("GET /api/v1/tasks/{task}", s.getTask)
	mux.HandleFunc("PUT /api/v1/tasks/{task}", s.updateTask)
	mux.HandleFunc("PATCH /api/v1/tasks/{task}", s.patchTask)
	mux.HandleFunc("POST /api/v1/tasks/{task}/enable", s.setEnabled(true))
	mux.HandleFunc("POST /api/v1/tasks/{task}/disable", s.setEnabled(false))
	mux.HandleFunc("DELETE /api/v1/tasks/{task}", s.deleteTask)

	mux.HandleFunc("GET /api/v1/tasks/{task}/triggers", s.listTriggers)
	mux.HandleFunc("POST /api/v1/tasks/{task}/triggers", s.createTrigger)
	mux.HandleFunc("GET /api/v1/tasks/{task}/triggers/{trigger}", s.getTrigger)
	mux.HandleFunc("PUT /api/v1/tasks/{task}/triggers/{trigger}", s.updateTrigger)
	mux.HandleFunc("DELETE /api/v1/tasks/{task}/triggers/{trigger}", s.deleteTrigger)

	mux.HandleFunc("POST /api/v1/tasks/{task}/runs", s.runNow)
	mux.HandleFunc("GET /api/v1/runs", s.listRuns)
	mux.HandleFunc("GET /api/v1/runs/{run}", s.getRun)
	mux.HandleFunc("GET /api/v1/runs/{run}/events", s.listEvents)
	mux.HandleFunc("POST /api/v1/runs/{run}/cancel", s.cancelRun)
	mux.HandleFunc("GET /api/v1/runs/{run}/attempts/{n}/log", s.readLog)
	s.envRoutes(mux)
	s.notifyRoutes(mux)
	s.accessRoutes(mux)
	s.openRoutes(mux)
	s.findRoutes(mux)
	s.scriptRoutes(mux)
	s.subsRoutes(mux)
	s.importRoutes(mux)

	// Everything else under the API is a JSON 404, not the mux's text one.
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		httpkit.Fail(w, r, s.log, notFoundRoute(r))
	})
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
			httpkit.WriteJSON(w, http.StatusServiceUnavailable, Health{Status: "unavailable", Version: s.version, Error: "not ready"})
			return
		}
	}
	httpkit.WriteJSON(w, http.StatusOK, Health{Status: "ok", Version: s.version, Containment: s.containment})
}
