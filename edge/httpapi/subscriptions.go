package httpapi

import (
	"net/http"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/deps"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/edge/subs"
	"github.com/ql3/ql3/httpkit"
)

// Subscriptions and dependencies (ADR 0054, ADR 0055). Every pull and
// every dependency action is a Run of a system task: these routes start
// Runs, the Run routes show their logs and cancel them.
//
//	GET    /api/v1/subscriptions               list
//	POST   /api/v1/subscriptions               create (and publish its system task)
//	GET    /api/v1/subscriptions/{id}
//	PUT    /api/v1/subscriptions/{id}          replace
//	DELETE /api/v1/subscriptions/{id}          forget it (its tasks and folder stay)
//	POST   /api/v1/subscriptions/{id}/pull     a pull now: a Run of its system task
//	POST   /api/v1/subscriptions/{id}/preview  dry run: fetch into a private stage, plan, discard
//	GET    /api/v1/pull/source                 the pull's process, with its Run's token
//	POST   /api/v1/pull/applied                the pull's process: the tree is in place, apply the plan
//	GET    /api/v1/dependencies[?kind=]        list, each with the state of its last Run
//	POST   /api/v1/dependencies                add and install
//	DELETE /api/v1/dependencies/{id}           forget it (remove uninstalls)
//	POST   /api/v1/dependencies/{id}/install | reinstall | remove | cancel
//	GET    /api/v1/dependencies/settings/{kind} | PUT

// SubsConfig wires the subscription and dependency routes.
type SubsConfig struct {
	Store  edge.SubscriptionStore
	Subs   *subs.Service
	Deps   *deps.Service
	Tokens *notify.Tokens // the Run tokens the pull's process presents
}

// The run-token paths of a pull's process.
const (
	PullSourcePath  = "/api/v1/pull/source"
	PullAppliedPath = "/api/v1/pull/applied"
)

var subsLimits = canonjson.Limits{MaxBytes: 64 << 10, MaxDepth: 4, MaxEntries: 3 * subplan.MaxFilterEntries, MaxString: 4096}

func (s *Server) subsRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/subscriptions", s.withSubs(s.listSubs))
	mux.HandleFunc("POST /api/v1/subscriptions", s.withSubs(s.createSub))
	mux.HandleFunc("GET /api/v1/subscriptions/{id}", s.withSubs(s.getSub))
	mux.HandleFunc("PUT /api/v1/subscriptions/{id}", s.withSubs(s.replaceSub))
	mux.HandleFunc("DELETE /api/v1/subscriptions/{id}", s.withSubs(s.deleteSub))
	mux.HandleFunc("POST /api/v1/subscriptions/{id}/pull", s.withSubs(s.pullSub))
	mux.HandleFunc("POST /api/v1/subscriptions/{id}/preview", s.withSubs(s.previewSub))
	mux.HandleFunc("GET "+PullSourcePath, s.withSubs(s.pullSource))
	mux.HandleFunc("POST "+PullAppliedPath, s.withSubs(s.pullApplied))
	s.depRoutes(mux)
}

func (s *Server) withSubs(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.subs == nil || s.subs.Subs == nil || s.subs.Deps == nil || s.subs.Store == nil {
			httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server has no subscriptions"))
			return
		}
		h(w, r)
	}
}

func (s *Server) listSubs(w http.ResponseWriter, r *http.Request) {
	list, err := s.subs.Store.ListSubscriptions(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := SubscriptionList{Subscriptions: make([]Subscription, len(list))}
	for i, sub := range list {
		out.Subscriptions[i] = subscriptionView(sub)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createSub(w http.ResponseWriter, r *http.Request) {
	var req SubscriptionRequest
	if err := decodeEnvBody(w, r, subsLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	sub, err := s.subs.Subs.Create(r.Context(), req.Def(), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, subscriptionView(sub))
}

func (s *Server) getSub(w http.ResponseWriter, r *http.Request) {
	sub, err := s.subs.Store.GetSubscription(r.Context(), r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, subscriptionView(sub))
}

func (s *Server) replaceSub(w http.ResponseWriter, r *http.Request) {
	var req SubscriptionRequest
	if err := decodeEnvBody(w, r, subsLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	sub, err := s.subs.Subs.Update(r.Context(), r.PathValue("id"), req.Def(), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, subscriptionView(sub))
}

func (s *Server) deleteSub(w http.ResponseWriter, r *http.Request) {
	if err := s.subs.Subs.Delete(r.Context(), r.PathValue("id"), s.actor(r)); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) pullSub(w http.ResponseWriter, r *http.Request) {
	key, err := httpkit.IdempotencyKey(r.Header.Get("Idempotency-Key"), "")
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rn, err := s.subs.Subs.Pull(r.Context(), r.PathValue("id"), key)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, runView(rn, nil))
}

func (s *Server) previewSub(w http.ResponseWriter, r *http.Request) {
	p, err := s.subs.Subs.Preview(r.Context(), r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := SubscriptionPreview{Commit: p.Commit, Skipped: p.Skipped, Changes: p.Changes}
	if out.Skipped == nil {
		out.Skipped = []subs.Skip{}
	}
	if out.Changes == nil {
		out.Changes = []subplan.Change{}
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// pullRun checks the Run token of a pull's process and finds its
// subscription: the path is open in the middleware and checked here.
func (s *Server) pullRun(w http.ResponseWriter, r *http.Request) (edge.Subscription, string, bool) {
	runID, ok := "", false
	if s.subs.Tokens != nil {
		scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " ")
		if found && strings.EqualFold(scheme, "Bearer") {
			runID, ok = s.subs.Tokens.Verify(strings.TrimSpace(tok))
		}
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ql3-pull"`)
		httpkit.Fail(w, r, s.log, errs.E(errs.Unauthorized, "Authorization", "this endpoint needs the pull Run's token (QL3_NOTIFY_TOKEN)"))
		return edge.Subscription{}, "", false
	}
	sub, err := s.subs.Subs.ForRun(r.Context(), runID)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return sub, "", false
	}
	return sub, runID, true
}

func (s *Server) pullSource(w http.ResponseWriter, r *http.Request) {
	sub, _, ok := s.pullRun(w, r)
	if !ok {
		return
	}
	c := s.subs.Subs.Config()
	httpkit.WriteJSON(w, http.StatusOK, PullSource{SubscriptionID: sub.ID, Slug: sub.Slug, Kind: sub.Kind, URL: sub.URL,
		Branch: sub.Branch, Proxy: sub.Proxy, Credential: sub.Credential, CredentialKind: sub.CredentialKind,
		ScriptsDir: c.ScriptsRoot, WorkDir: c.WorkDir})
}

func (s *Server) pullApplied(w http.ResponseWriter, r *http.Request) {
	sub, runID, ok := s.pullRun(w, r)
	if !ok {
		return
	}
	var req PullAppliedRequest
	if err := decodeEnvBody(w, r, subsLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	ch, err := s.subs.Subs.Apply(r.Context(), sub, req.Commit, s.now().UnixMilli(), "run:"+runID)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if ch == nil {
		ch = []subplan.Change{}
	}
	httpkit.WriteJSON(w, http.StatusOK, PullApplied{Changes: ch})
}
