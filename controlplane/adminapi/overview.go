package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/httpkit"
)

// GET /api/v1/overview?project= (ADR 0057): the panel's overview page,
// the edge's shape plus the workers online.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	projectID, err := s.queryProjectID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o, err := s.b.Overview(r.Context(), projectID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, o)
}

// queryProjectID resolves the optional ?project= (id or name) of a list
// that spans every project without it ("" then).
func (s *Server) queryProjectID(r *http.Request) (string, error) {
	ref := r.URL.Query().Get("project")
	if ref == "" {
		return "", nil
	}
	p, err := s.resolveProject(r.Context(), "project", ref)
	if err != nil {
		return "", err
	}
	return p.ID, nil
}
