package httpapi

import (
	"net/http"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// Findable at scale (ADR 0050): the task list's search and filters with
// what each row shows (triggers, last run: one query each per page), the
// overview, saved views.

// TaskList is the answer of GET /api/v1/tasks: a page and the number of
// tasks the filter selects.
type TaskList struct {
	Items      []Task `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
	Total      int64  `json:"total"`
}

// ViewRequest is the body of POST /api/v1/views.
type ViewRequest struct {
	Name   string     `json:"name"`
	Filter ViewFilter `json:"filter"`
}

// ViewFilter is what a view selects on the task list ("" for no filter).
type ViewFilter struct {
	Q       string `json:"q,omitempty"`
	Label   string `json:"label,omitempty"`
	Enabled string `json:"enabled,omitempty"` // "true" | "false"
}

// View is a saved task filter.
type View struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Filter      ViewFilter `json:"filter"`
	CreatedAtMs int64      `json:"createdAtMs"`
}

// Overview is the answer of GET /api/v1/overview.
type Overview struct {
	NowMs    int64         `json:"nowMs"`
	SinceMs  int64         `json:"sinceMs"` // "recent" starts here: 24 h ago
	Tasks    OverviewTasks `json:"tasks"`
	Runs     OverviewRuns  `json:"runs"`
	Failures Failures      `json:"failures"`
	// NextFires are the earliest next fires over all triggers.
	NextFires []NextFire `json:"nextFires"`
}

// OverviewTasks counts live tasks.
type OverviewTasks struct {
	Total    int64 `json:"total"`
	Enabled  int64 `json:"enabled"`
	Disabled int64 `json:"disabled"`
}

// OverviewRuns counts runs by status: those not finished, and those that
// finished since SinceMs.
type OverviewRuns struct {
	Active  map[string]int64 `json:"active"`
	Last24h map[string]int64 `json:"last24h"`
}

// Failures are the runs that failed, timed out or were lost since SinceMs:
// how many, and the newest ten with their tasks' names.
type Failures struct {
	Count  int64 `json:"count"`
	Recent []Run `json:"recent"`
}

// NextFire is one upcoming occurrence.
type NextFire struct {
	AtMs       int64  `json:"atMs"`
	TaskID     string `json:"taskId"`
	TaskName   string `json:"taskName"`
	TriggerID  string `json:"triggerId"`
	Expression string `json:"expression"`
	TimeZone   string `json:"timeZone"`
}

func (s *Server) findRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/overview", s.overview)
	mux.HandleFunc("GET /api/v1/views", s.listViews)
	mux.HandleFunc("POST /api/v1/views", s.createView)
	mux.HandleFunc("DELETE /api/v1/views/{view}", s.deleteView)
}

// listTasks: ?q= (name, command, label substring), ?label=, ?enabled=,
// ?deleted=1, paged; each item with its triggers and its newest run.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	f, err := taskFilter(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	ctx := r.Context()
	page, err := s.store.ListTasks(ctx, f)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	ids := make([]string, len(page.Tasks))
	for i, t := range page.Tasks {
		ids[i] = t.ID
	}
	triggers, err := s.store.TriggersOf(ctx, ids)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	last, err := s.store.LastRuns(ctx, ids)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	now := s.now().UnixMilli()
	out := TaskList{Items: make([]Task, 0, len(page.Tasks)), NextCursor: page.NextCursor, Total: page.Total}
	for _, t := range page.Tasks {
		v := taskView(t, triggers[t.ID], now)
		if lr, ok := last[t.ID]; ok {
			lv := runView(lr, nil)
			lv.TaskName = t.Name
			v.LastRun = &lv
		}
		out.Items = append(out.Items, v)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func taskFilter(r *http.Request) (edge.TaskFilter, error) {
	q := r.URL.Query()
	limit, err := queryLimit(r)
	if err != nil {
		return edge.TaskFilter{}, err
	}
	deleted, err := queryBool(r, "deleted")
	if err != nil {
		return edge.TaskFilter{}, err
	}
	f := edge.TaskFilter{IncludeDeleted: deleted, Limit: limit, Cursor: q.Get("cursor"), Search: q.Get("q"), Label: q.Get("label")}
	if len(f.Label) > 4*edge.MaxLabelChars {
		return edge.TaskFilter{}, errs.Invalidf("label", "must be at most %d characters", edge.MaxLabelChars)
	}
	if v := q.Get("enabled"); v != "" {
		b, err := queryBool(r, "enabled")
		if err != nil {
			return edge.TaskFilter{}, err
		}
		f.Enabled = &b
	}
	return f, nil
}

func (s *Server) applyLabels(w http.ResponseWriter, r *http.Request, labels []string, enabled *bool) {
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if t, err = s.store.SetTaskLabels(r.Context(), t.ID, labels); err == nil && enabled != nil {
		t, err = s.store.SetTaskEnabled(r.Context(), t.ID, *enabled)
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, taskView(t, nil, 0))
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	o, err := s.store.Overview(r.Context(), s.now().UnixMilli())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := Overview{
		NowMs: o.NowMs, SinceMs: o.SinceMs,
		Tasks:     OverviewTasks{Total: o.Tasks.Total, Enabled: o.Tasks.Enabled, Disabled: o.Tasks.Total - o.Tasks.Enabled},
		Runs:      OverviewRuns{Active: o.Active, Last24h: o.Recent},
		Failures:  Failures{Count: o.FailureCount, Recent: make([]Run, 0, len(o.Failures))},
		NextFires: make([]NextFire, 0, len(o.NextFires)),
	}
	for _, rn := range o.Failures {
		out.Failures.Recent = append(out.Failures.Recent, runView(rn, nil))
	}
	for _, f := range o.NextFires {
		out.NextFires = append(out.NextFires, NextFire{AtMs: f.AtMs, TaskID: f.TaskID, TaskName: f.TaskName,
			TriggerID: f.TriggerID, Expression: f.Expression, TimeZone: f.TimeZone})
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func viewOf(v edge.View) View {
	return View{ID: v.ID, Name: v.Name, CreatedAtMs: v.CreatedAtMs,
		Filter: ViewFilter{Q: v.Filter.Search, Label: v.Filter.Label, Enabled: v.Filter.Enabled}}
}

func (s *Server) listViews(w http.ResponseWriter, r *http.Request) {
	vs, err := s.store.ListViews(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(vs, "", viewOf))
}

func (s *Server) createView(w http.ResponseWriter, r *http.Request) {
	var req ViewRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	v, err := s.store.CreateView(r.Context(), req.Name, edge.ViewFilter{Search: req.Filter.Q, Label: req.Filter.Label, Enabled: req.Filter.Enabled})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/api/v1/views/"+v.ID)
	httpkit.WriteJSON(w, http.StatusCreated, viewOf(v))
}

func (s *Server) deleteView(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteView(r.Context(), r.PathValue("view")); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
