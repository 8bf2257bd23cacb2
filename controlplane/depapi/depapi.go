// Package depapi is the control plane's dependency routes (issue 24, ADR
// 0062): a project's dependencies, each action one Run per matching
// online worker of that worker's pinned system task, and what each worker
// has installed. The admin API (adminapi) mounts its routes; the rules of
// names, versions and shell lines are core/depcmd's, the edge's.
package depapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// Backend is what the routes need of the publication store.
type Backend interface {
	GetProject(ctx context.Context, ref string) (controlplane.Project, error)
	GetTask(ctx context.Context, id string) (controlplane.Task, error)
	PublishTask(ctx context.Context, in controlplane.TaskInput) (controlplane.Task, error)
	DeleteTask(ctx context.Context, in controlplane.DeleteInput) (controlplane.Task, error)
	SetTaskLabels(ctx context.Context, taskID string, labels []string) (controlplane.Task, error)
}

// RunControl starts and cancels the actions' Runs (runtime role).
type RunControl interface {
	RunNow(ctx context.Context, in controlplane.RunNowInput) (controlplane.RunNowResult, error)
	CancelRun(ctx context.Context, runRef, actor string) (controlplane.CancelOutcome, error)
}

// Config wires an API.
type Config struct {
	// Deps stores the dependencies; nil answers the routes 503.
	Deps    controlplane.Dependencies
	Backend Backend
	// Runs starts and cancels Runs; nil answers the actions 503.
	Runs RunControl
	// Actor names who asks (the API token's id).
	Actor   func(r *http.Request) string
	MaxBody int
	Logger  *slog.Logger
}

// API serves the dependency routes.
type API struct {
	deps    controlplane.Dependencies
	b       Backend
	runs    RunControl
	actor   func(r *http.Request) string
	maxBody int
	log     *slog.Logger
}

// New returns an API.
func New(cfg Config) *API {
	a := &API{deps: cfg.Deps, b: cfg.Backend, runs: cfg.Runs, actor: cfg.Actor, maxBody: cfg.MaxBody, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.actor == nil {
		a.actor = func(*http.Request) string { return "unknown" }
	}
	if a.maxBody <= 0 {
		a.maxBody = 64 << 10
	}
	return a
}

// Routes registers /api/v1/projects/{project}/dependencies….
func (s *API) Routes(mux httpkit.Mux) { s.depRoutes(mux) }

func (s *API) fail(w http.ResponseWriter, r *http.Request, err error) { httpkit.Fail(w, r, s.log, err) }

func (s *API) runOps() (RunControl, error) {
	if s.runs == nil {
		return nil, errs.E(errs.Unavailable, "", "run control is not configured on this server")
	}
	return s.runs, nil
}
