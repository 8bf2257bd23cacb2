package adminapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// maxStatusFilter bounds the statuses of one ?status= filter.
const maxStatusFilter = 16

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := controlplane.RunListFilter{TaskID: q.Get("task"), TriggerID: q.Get("trigger"), Origin: q.Get("origin"), Page: pr}
	if ref := q.Get("project"); ref != "" {
		p, err := s.resolveProject(r.Context(), "project", ref)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.ProjectID = p.ID
	}
	if v := q.Get("status"); v != "" {
		f.Statuses = strings.Split(v, ",")
		if len(f.Statuses) > maxStatusFilter {
			s.fail(w, r, errs.Invalidf("status", "at most %d statuses", maxStatusFilter))
			return
		}
	}
	page, err := s.b.ListRuns(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, err := s.runListItems(r.Context(), page.Items)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(controlplane.ListPage[RunListItem]{Items: items, NextCursor: page.NextCursor}))
}

// runListItems adds the wait reason to the page's Runs that have not
// started: one batched read for the page (RunControl.WaitReasons), none
// when no row waits or no runtime port is configured.
func (s *Server) runListItems(ctx context.Context, runs []controlplane.Run) ([]RunListItem, error) {
	items := make([]RunListItem, len(runs))
	var waiting []string
	for i, run := range runs {
		items[i].RunRecord = RunRecord(run)
		switch run.Status {
		case "created", "queued", "retry_wait":
			waiting = append(waiting, run.ID)
		}
	}
	if s.runs == nil || len(waiting) == 0 {
		return items, nil
	}
	reasons, err := s.runs.WaitReasons(ctx, waiting)
	if err != nil {
		return nil, err
	}
	for i := range items {
		items[i].WaitReason = reasons[items[i].ID]
	}
	return items, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.b.GetRun(r.Context(), r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.runView(r.Context(), run)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, v)
}

// listEvents returns events after ?after= (a seq); NextCursor is the last
// seq when the page is full, to pass back as ?after=.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	after, err := httpkit.QueryInt64(r, "after", 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	events, err := s.b.ListRunEvents(r.Context(), r.PathValue("run"), after, pr.Limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := List[controlplane.RunEvent]{Items: events}
	limit := pr.Limit
	if limit == 0 {
		limit = controlplane.DefaultListLimit
	}
	if len(events) == limit {
		out.NextCursor = strconv.FormatInt(events[len(events)-1].Seq, 10)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}
