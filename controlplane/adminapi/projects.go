package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/httpkit"
)

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.b.ListProjects(r.Context(), pr)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(page))
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	var req CreateProjectRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.b.PublishProject(r.Context(), projectInput(req))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/projects/"+p.ID)
	httpkit.WriteJSON(w, http.StatusCreated, p)
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	p, err := s.b.GetProject(r.Context(), r.PathValue("project"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, p)
}

func (s *Server) archiveProject(w http.ResponseWriter, r *http.Request) {
	var req ArchiveProjectRequest
	if err := s.decodeOptionalBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.b.GetProject(r.Context(), r.PathValue("project"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err = s.b.ArchiveProject(r.Context(), archiveInput(p.ID, req))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, p)
}
