package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := queryLimit(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	f := edge.RunFilter{TriggerID: q.Get("trigger"), Limit: limit, Cursor: q.Get("cursor")}
	if ref := q.Get("task"); ref != "" {
		t, err := s.resolveTask(r.Context(), ref)
		if err != nil {
			if errs.Code(err) == errs.NotFound {
				err = errs.Invalidf("task", "no task with id or name %q", ref)
			}
			httpkit.Fail(w, r, s.log, err)
			return
		}
		f.TaskID = t.ID
	}
	switch o := edge.RunOrigin(q.Get("origin")); o {
	case "", edge.OriginSchedule, edge.OriginManual:
		f.Origin = o
	default:
		httpkit.Fail(w, r, s.log, errs.Invalidf("origin", "must be %s or %s, got %.32q", edge.OriginSchedule, edge.OriginManual, string(o)))
		return
	}
	if v := q.Get("status"); v != "" {
		for _, part := range strings.Split(v, ",") {
			st, err := run.ParseRunStatus(strings.TrimSpace(part))
			if err != nil {
				httpkit.Fail(w, r, s.log, err)
				return
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	page, err := s.store.ListRuns(r.Context(), f)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(page.Runs, page.NextCursor, func(rn edge.Run) Run { return runView(rn, nil) }))
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.store.GetRun(r.Context(), r.PathValue("run"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	attempts, err := s.store.ListAttempts(r.Context(), rn.ID)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, runView(rn, attempts))
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	after, err := httpkit.QueryInt64(r, "after", 0)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	limit, err := queryLimit(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if limit == 0 {
		limit = edge.MaxPageSize
	}
	id := r.PathValue("run")
	if _, err := s.store.GetRun(r.Context(), id); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	events, err := s.store.ListRunEvents(r.Context(), id, after, limit)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := listOf(events, "", eventView)
	if len(events) == limit {
		out.NextCursor = strconv.FormatInt(events[len(events)-1].Seq, 10) // pass as ?after=
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) runNow(w http.ResponseWriter, r *http.Request) {
	var req RunNowRequest
	if err := httpkit.DecodeOptionalJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	key, err := httpkit.IdempotencyKey(r.Header.Get("Idempotency-Key"), req.IdempotencyKey)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rn, created, err := s.store.CreateManualRun(r.Context(), edge.ManualRun{TaskID: t.ID, IdempotencyKey: key, RerunOf: req.RerunOf})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	v := runView(rn, nil)
	v.Created = &created
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/runs/"+rn.ID)
		s.log.InfoContext(r.Context(), "run queued", "run", rn.ID, "task", t.ID, "origin", "manual")
	}
	httpkit.WriteJSON(w, status, v)
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	if err := httpkit.DecodeOptionalJSON(w, r, s.maxBody, &none); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rn, err := s.store.RequestCancel(r.Context(), r.PathValue("run"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	status := http.StatusOK
	if !rn.Status.Terminal() {
		status = http.StatusAccepted // the runner is stopping the process
	}
	s.log.InfoContext(r.Context(), "run cancel requested", "run", rn.ID, "status", string(rn.Status))
	httpkit.WriteJSON(w, status, runView(rn, nil))
}
