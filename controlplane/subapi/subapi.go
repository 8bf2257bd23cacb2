// Package subapi serves a project's subscriptions on the admin API
// (issue 24, ADR 0061); adminapi mounts its routes. It links the root
// package, core and httpkit only.
package subapi

import (
	"net/http"
	"strconv"

	"context"
	"log/slog"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/core/subwire"
	"github.com/ql3/ql3/httpkit"
)

// A project's subscriptions (issue 24, ADR 0061), the edge's routes under
// the project and with the edge's JSON: a git repository (or a raw file)
// pulled into the project's scripts folder under <slug>/, its scripts'
// cron comments made tasks. Every pull is a Run of the subscription's
// system task, run by the control plane's own executor.
//
//	GET    /api/v1/projects/{project}/subscriptions              list
//	POST   /api/v1/projects/{project}/subscriptions              create (publishes the system task)
//	GET    /api/v1/projects/{project}/subscriptions/{id}
//	PUT    /api/v1/projects/{project}/subscriptions/{id}         replace (?expectedVersion= optional)
//	DELETE /api/v1/projects/{project}/subscriptions/{id}         the tasks it made and its folder stay
//	POST   /api/v1/projects/{project}/subscriptions/{id}/pull    a Run of the system task now
//	POST   /api/v1/projects/{project}/subscriptions/{id}/preview what a pull would do (nothing written)

const subBase = "/api/v1/projects/{project}/subscriptions"

var subLimits = canonjson.Limits{MaxBytes: 64 << 10, MaxDepth: 4, MaxEntries: 3 * subplan.MaxFilterEntries, MaxString: 4096}

// SubscriptionRequest creates or replaces a subscription (the edge's
// shape; credential names an env store entry of the project).
type SubscriptionRequest = subwire.SubscriptionRequest

// SubscriptionView is a subscription as the API shows it (the edge's
// fields, plus its project and version).
type SubscriptionView struct {
	ID              string   `json:"id"`
	ProjectID       string   `json:"projectId"`
	Name            string   `json:"name"`
	Slug            string   `json:"slug"`
	Kind            string   `json:"kind"`
	URL             string   `json:"url"`
	Branch          string   `json:"branch"`
	Credential      string   `json:"credential"`
	CredentialKind  string   `json:"credentialKind"`
	Include         []string `json:"include"`
	Exclude         []string `json:"exclude"`
	Extensions      []string `json:"extensions"`
	Schedule        string   `json:"schedule"`
	AutoAddTasks    bool     `json:"autoAddTasks"`
	AutoRemoveTasks bool     `json:"autoRemoveTasks"`
	RemoveMode      string   `json:"removeMode"`
	DefaultCron     string   `json:"defaultCron"`
	Proxy           string   `json:"proxy"`
	TimeZone        string   `json:"timeZone"`
	Enabled         bool     `json:"enabled"`
	TaskID          string   `json:"taskId"`
	LastCommit      string   `json:"lastCommit"`
	LastPullAtMs    int64    `json:"lastPullAtMs"`
	Version         int64    `json:"version"`
	CreatedAtMs     int64    `json:"createdAtMs"`
	UpdatedAtMs     int64    `json:"updatedAtMs"`
}

// SubscriptionList is a project's subscriptions (at most
// controlplane.MaxSubscriptionsPerProject).
type SubscriptionList struct {
	Subscriptions []SubscriptionView `json:"subscriptions"`
}

// Config wires an API.
type Config struct {
	// Subs is the subscriptions' port; nil answers the routes 503.
	Subs controlplane.Subscriptions
	// Backend resolves {project} (id or name) and reads a Run.
	Backend interface {
		GetProject(ctx context.Context, ref string) (controlplane.Project, error)
		GetRun(ctx context.Context, id string) (controlplane.Run, error)
	}
	// Actor names who asks (the API token id), for the Run's audit.
	Actor  func(r *http.Request) string
	Logger *slog.Logger
}

// API serves the subscription routes.
type API struct{ cfg Config }

// New returns an API.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &API{cfg: cfg}
}

// PullRequest optionally carries the client key of a pull (else the
// Idempotency-Key header): the same key returns the same Run.
type PullRequest struct {
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// RunView is a Run started by a pull, as the admin API shows a run-now.
type RunView struct {
	controlplane.Run
	Created *bool `json:"created,omitempty"`
}

func (s *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	httpkit.Fail(w, r, s.cfg.Logger, err)
}

// Routes mounts the routes.
func (s *API) Routes(mux httpkit.Mux) {
	mux.HandleFunc("GET "+subBase, s.withProject(s.listSubs))
	mux.HandleFunc("POST "+subBase, s.withProject(s.createSub))
	mux.HandleFunc("GET "+subBase+"/{id}", s.withProject(s.getSub))
	mux.HandleFunc("PUT "+subBase+"/{id}", s.withProject(s.replaceSub))
	mux.HandleFunc("DELETE "+subBase+"/{id}", s.withProject(s.deleteSub))
	mux.HandleFunc("POST "+subBase+"/{id}/pull", s.withProject(s.pullSub))
	mux.HandleFunc("POST "+subBase+"/{id}/preview", s.withProject(s.previewSub))
}

// withProject answers 503 without subscriptions and resolves {project}.
func (s *API) withProject(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Subs == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server does not keep subscriptions"))
			return
		}
		p, err := s.cfg.Backend.GetProject(r.Context(), r.PathValue("project"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, p.ID)
	}
}

func subView(sub controlplane.Subscription) SubscriptionView {
	nz := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	return SubscriptionView{ID: sub.ID, ProjectID: sub.ProjectID, Name: sub.Name, Slug: sub.Slug, Kind: sub.Kind, URL: sub.URL,
		Branch: sub.Branch, Credential: sub.Credential, CredentialKind: sub.CredentialKind, Include: nz(sub.Filter.Include),
		Exclude: nz(sub.Filter.Exclude), Extensions: nz(sub.Filter.Extensions), Schedule: sub.Schedule, AutoAddTasks: sub.AutoAdd,
		AutoRemoveTasks: sub.AutoRemove, RemoveMode: sub.RemoveMode, DefaultCron: sub.DefaultCron, Proxy: sub.Proxy,
		TimeZone: sub.TimeZone, Enabled: sub.Enabled, TaskID: sub.TaskID, LastCommit: sub.LastCommit, LastPullAtMs: sub.LastPullAtMs,
		Version: sub.Version, CreatedAtMs: sub.CreatedAtMs, UpdatedAtMs: sub.UpdatedAtMs}
}

// ownSub reads {id} and checks it belongs to the project.
func (s *API) ownSub(r *http.Request, project string) (controlplane.Subscription, error) {
	sub, err := s.cfg.Subs.GetSubscription(r.Context(), r.PathValue("id"))
	if err == nil && sub.ProjectID != project {
		err = errs.NotFoundf("no subscription %s in this project", r.PathValue("id"))
	}
	return sub, err
}

func (s *API) decodeSub(w http.ResponseWriter, r *http.Request) (SubscriptionRequest, error) {
	var req SubscriptionRequest
	data, err := httpkit.ReadBody(w, r, subLimits.MaxBytes)
	if err != nil {
		return req, err
	}
	if len(data) == 0 {
		return req, errs.Invalidf("", "request body is empty; expected a JSON object")
	}
	return req, canonjson.DecodeStrict(data, subLimits, &req)
}

func (s *API) listSubs(w http.ResponseWriter, r *http.Request, project string) {
	list, err := s.cfg.Subs.ListSubscriptions(r.Context(), project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := SubscriptionList{Subscriptions: make([]SubscriptionView, 0, len(list))}
	for _, sub := range list {
		out.Subscriptions = append(out.Subscriptions, subView(sub))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *API) createSub(w http.ResponseWriter, r *http.Request, project string) {
	req, err := s.decodeSub(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sub, err := s.cfg.Subs.CreateSubscription(r.Context(), project, req.Def())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, subView(sub))
}

func (s *API) getSub(w http.ResponseWriter, r *http.Request, project string) {
	sub, err := s.ownSub(r, project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, subView(sub))
}

func (s *API) replaceSub(w http.ResponseWriter, r *http.Request, project string) {
	req, err := s.decodeSub(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cur, err := s.ownSub(r, project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var version int64
	if v := r.URL.Query().Get("expectedVersion"); v != "" {
		if version, err = strconv.ParseInt(v, 10, 64); err != nil || version < 1 {
			s.fail(w, r, errs.Invalidf("expectedVersion", "must be a positive integer, got %.32q", v))
			return
		}
	}
	sub, err := s.cfg.Subs.UpdateSubscription(r.Context(), cur.ID, version, req.Def())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, subView(sub))
}

func (s *API) deleteSub(w http.ResponseWriter, r *http.Request, project string) {
	cur, err := s.ownSub(r, project)
	if err == nil {
		_, err = s.cfg.Subs.DeleteSubscription(r.Context(), cur.ID)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *API) pullSub(w http.ResponseWriter, r *http.Request, project string) {
	cur, err := s.ownSub(r, project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req PullRequest
	if data, err := httpkit.ReadBody(w, r, subLimits.MaxBytes); err != nil {
		s.fail(w, r, err)
		return
	} else if len(data) > 0 {
		if err := canonjson.DecodeStrict(data, subLimits, &req); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	key, err := httpkit.IdempotencyKey(r.Header.Get("Idempotency-Key"), req.IdempotencyKey)
	if err == nil && key == "" {
		err = errs.Invalidf("Idempotency-Key", "required: a client key (header or body idempotencyKey)")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Subs.PullSubscription(r.Context(), cur.ID, key, s.cfg.Actor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.cfg.Backend.GetRun(r.Context(), res.RunID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/runs/"+run.ID)
	}
	httpkit.WriteJSON(w, status, RunView{Run: run, Created: &res.Created})
}

func (s *API) previewSub(w http.ResponseWriter, r *http.Request, project string) {
	cur, err := s.ownSub(r, project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.cfg.Subs.PreviewSubscription(r.Context(), cur.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if p.Skipped == nil {
		p.Skipped = []controlplane.SubscriptionSkip{}
	}
	if p.Changes == nil {
		p.Changes = []subplan.Change{}
	}
	httpkit.WriteJSON(w, http.StatusOK, p)
}
