package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// QingLong's Open API apps (ADR 0057), each scoped to one project:
//
//	GET    /api/v1/apps?project=     list (never secrets or digests)
//	POST   /api/v1/apps              {project, name, scopes}: the client secret is in this response only
//	DELETE /api/v1/apps/{app}        delete (its tokens end with it)
//
// The Open API itself (/open/…) is the handler in Config.Open.

// CreateAppRequest is the body of POST /api/v1/apps.
type CreateAppRequest struct {
	Project string   `json:"project"` // id or name
	Name    string   `json:"name"`
	Scopes  []string `json:"scopes"` // envs, crons, scripts, logs, system
}

// CreatedApp is an app with its client secret (shown once).
type CreatedApp struct {
	controlplane.OpenApp
	ClientSecret string `json:"clientSecret"`
}

func (s *Server) appRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/apps", s.withApps(s.listApps))
	mux.HandleFunc("POST /api/v1/apps", s.withApps(s.createApp))
	mux.HandleFunc("DELETE /api/v1/apps/{app}", s.withApps(s.deleteApp))
	open := s.open
	if open == nil {
		open = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httpkit.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"code": 503, "message": "this server does not serve the Open API"})
		})
	}
	mux.HandleFunc("/open/", open.ServeHTTP)
}

func (s *Server) withApps(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.apps == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no Open API store"))
			return
		}
		h(w, r)
	}
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request) {
	projectID, err := s.queryProjectID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	apps, err := s.apps.ListOpenApps(r.Context(), projectID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if apps == nil {
		apps = []controlplane.OpenApp{}
	}
	httpkit.WriteJSON(w, http.StatusOK, List[controlplane.OpenApp]{Items: apps})
}

func (s *Server) createApp(w http.ResponseWriter, r *http.Request) {
	var req CreateAppRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.resolveProject(r.Context(), "project", req.Project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	app, secret, err := s.apps.CreateOpenApp(r.Context(), controlplane.OpenAppInput{ProjectID: p.ID, Name: req.Name, Scopes: req.Scopes})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "open api app created", "app", app.Name, "project", p.Name)
	httpkit.WriteJSON(w, http.StatusCreated, CreatedApp{OpenApp: app, ClientSecret: secret})
}

func (s *Server) deleteApp(w http.ResponseWriter, r *http.Request) {
	if err := s.apps.DeleteOpenApp(r.Context(), r.PathValue("app")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
