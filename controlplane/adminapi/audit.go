package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/httpkit"
)

// listAudit returns audit lines newest first (?action=&subject=&actor=
// &limit=&cursor=), keyset-paged and bounded like every list.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	page, err := s.b.ListAudit(r.Context(), controlplane.AuditFilter{
		Action: q.Get("action"), SubjectID: q.Get("subject"), ActorID: q.Get("actor"), Page: pr,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(page))
}
