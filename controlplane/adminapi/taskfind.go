package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// The findable task list (ADR 0050's contract, ADR 0057): ?q=, ?label=,
// ?enabled= and the number of tasks the filter selects; labels; a
// project's saved views.

// TaskList is the answer of GET /api/v1/tasks: a page and the number of
// tasks the filter selects.
type TaskList struct {
	Items      []Task `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
	Total      int64  `json:"total"`
}

// ViewRequest is the body of POST /api/v1/views.
type ViewRequest struct {
	Project string                      `json:"project"`
	Name    string                      `json:"name"`
	Filter  controlplane.TaskViewFilter `json:"filter"`
}

// maxLabelQuery bounds ?label= before it is checked.
const maxLabelQuery = 128

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := controlplane.TaskFilter{Q: q.Get("q"), Label: q.Get("label"), Page: pr}
	if len(f.Label) > maxLabelQuery {
		s.fail(w, r, errs.Invalidf("label", "must be at most 32 characters"))
		return
	}
	if q.Get("enabled") != "" {
		b, err := queryBool(r, "enabled")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.Enabled = &b
	}
	if ref := q.Get("project"); ref != "" {
		p, err := s.resolveProject(r.Context(), "project", ref)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.ProjectID = p.ID
	}
	page, err := s.b.FindTaskPage(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := TaskList{Items: make([]Task, 0, len(page.Items)), NextCursor: page.NextCursor, Total: page.Total}
	for _, t := range page.Items {
		out.Items = append(out.Items, Task{TaskRecord: TaskRecord(t)})
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// applyLabels replaces a task's labels, then sets enabled when given.
func (s *Server) applyLabels(w http.ResponseWriter, r *http.Request, mutationID string, labels []string, enabled *bool) {
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if t, err = s.b.SetTaskLabels(r.Context(), t.ID, labels); err == nil && enabled != nil {
		t, err = s.b.SetTaskEnabled(r.Context(), controlplane.TaskEnabledInput{MutationID: mutationID, TaskID: t.ID, Enabled: *enabled})
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, Task{TaskRecord: TaskRecord(t)})
}

func (s *Server) listViews(w http.ResponseWriter, r *http.Request) {
	p, err := s.resolveProject(r.Context(), "project", r.URL.Query().Get("project"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	vs, err := s.b.ListTaskViews(r.Context(), p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, List[controlplane.TaskView]{Items: vs})
}

func (s *Server) createView(w http.ResponseWriter, r *http.Request) {
	var req ViewRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.resolveProject(r.Context(), "project", req.Project)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.b.CreateTaskView(r.Context(), p.ID, req.Name, req.Filter)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/views/"+v.ID)
	httpkit.WriteJSON(w, http.StatusCreated, v)
}

func (s *Server) deleteView(w http.ResponseWriter, r *http.Request) {
	if err := s.b.DeleteTaskView(r.Context(), r.PathValue("view")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
