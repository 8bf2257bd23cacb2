package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/httpkit"
)

// GET /api/v1/overview?project= (ADR 0057): the panel's overview page,
// the edge's shape plus the workers online.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	projectID := ""
	if ref := r.URL.Query().Get("project"); ref != "" {
		p, err := s.resolveProject(r.Context(), "project", ref)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		projectID = p.ID
	}
	o, err := s.b.Overview(r.Context(), projectID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, o)
}
