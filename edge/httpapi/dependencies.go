package httpapi

import (
	"net/http"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

func (s *Server) depRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/dependencies", s.withSubs(s.listDeps))
	mux.HandleFunc("POST /api/v1/dependencies", s.withSubs(s.createDep))
	mux.HandleFunc("DELETE /api/v1/dependencies/{id}", s.withSubs(s.deleteDep))
	mux.HandleFunc("POST /api/v1/dependencies/{id}/install", s.withSubs(s.depAction(edge.DepInstall)))
	mux.HandleFunc("POST /api/v1/dependencies/{id}/reinstall", s.withSubs(s.depAction(edge.DepReinstall)))
	mux.HandleFunc("POST /api/v1/dependencies/{id}/remove", s.withSubs(s.depAction(edge.DepRemove)))
	mux.HandleFunc("POST /api/v1/dependencies/{id}/cancel", s.withSubs(s.cancelDep))
	mux.HandleFunc("GET /api/v1/dependencies/settings/{kind}", s.withSubs(s.getDepSettings))
	mux.HandleFunc("PUT /api/v1/dependencies/settings/{kind}", s.withSubs(s.putDepSettings))
}

func (s *Server) depView(r *http.Request, d edge.Dependency) (Dependency, error) {
	last, err := s.subs.Deps.Last(r.Context(), d)
	if err != nil {
		return Dependency{}, err
	}
	return dependencyView(d, last), nil
}

func (s *Server) listDeps(w http.ResponseWriter, r *http.Request) {
	list, err := s.subs.Store.ListDependencies(r.Context(), r.URL.Query().Get("kind"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := DependencyList{Dependencies: make([]Dependency, len(list))}
	for i, d := range list {
		if out.Dependencies[i], err = s.depView(r, d); err != nil {
			httpkit.Fail(w, r, s.log, err)
			return
		}
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) writeDepAction(w http.ResponseWriter, r *http.Request, d edge.Dependency, rn edge.Run) {
	v, err := s.depView(r, d)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, DependencyAction{Dependency: v, Run: runView(rn, nil)})
}

func (s *Server) createDep(w http.ResponseWriter, r *http.Request) {
	var req DependencyRequest
	if err := decodeEnvBody(w, r, subsLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	d, rn, err := s.subs.Deps.Create(r.Context(), edge.NewDependency{Kind: req.Kind, Name: req.Name, Version: req.Version}, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.writeDepAction(w, r, d, rn)
}

func (s *Server) depAction(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, rn, err := s.subs.Deps.Act(r.Context(), r.PathValue("id"), action, s.actor(r))
		if err != nil {
			httpkit.Fail(w, r, s.log, err)
			return
		}
		s.writeDepAction(w, r, d, rn)
	}
}

func (s *Server) cancelDep(w http.ResponseWriter, r *http.Request) {
	rn, err := s.subs.Deps.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	status := http.StatusOK
	if !rn.Status.Terminal() {
		status = http.StatusAccepted // asked; the runner ends it
	}
	httpkit.WriteJSON(w, status, runView(rn, nil))
}

func (s *Server) deleteDep(w http.ResponseWriter, r *http.Request) {
	if err := s.subs.Deps.Delete(r.Context(), r.PathValue("id"), s.actor(r)); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getDepSettings(w http.ResponseWriter, r *http.Request) {
	set, err := s.subs.Store.GetDependencySettings(r.Context(), r.PathValue("kind"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, DependencySettings{Kind: set.Kind, Registry: set.Registry, Proxy: set.Proxy})
}

func (s *Server) putDepSettings(w http.ResponseWriter, r *http.Request) {
	var req DependencySettings
	if err := decodeEnvBody(w, r, subsLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if req.Kind != r.PathValue("kind") {
		httpkit.Fail(w, r, s.log, errs.Invalidf("kind", "must be the path's kind %q", r.PathValue("kind")))
		return
	}
	set, err := s.subs.Store.SetDependencySettings(r.Context(), edge.DependencySettings{Kind: req.Kind, Registry: req.Registry, Proxy: req.Proxy}, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, DependencySettings{Kind: set.Kind, Registry: set.Registry, Proxy: set.Proxy})
}
