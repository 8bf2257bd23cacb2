package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// The cron row, its input and its page are core/qlopen's (one copy for
// both binaries, ADR 0057).
type (
	OpenCron      = qlopen.Cron
	OpenSchedule  = qlopen.Schedule
	OpenCronInput = qlopen.CronInput
	OpenCronPage  = qlopen.CronPage
)

// Bounds of GET /open/crons: a page of at most edge.MaxPageSize; without
// page and size at most openMaxUnpaged matches (QingLong returns all).
const (
	openMaxUnpaged = 1000
	openMaxScan    = 100_000
	openLogTail    = 256 << 10
)

func (s *Server) openCronRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/crons", s.withApp(s.openListCrons))
	mux.HandleFunc("POST /open/crons", s.withApp(s.openCreateCron))
	mux.HandleFunc("PUT /open/crons", s.withApp(s.openUpdateCron))
	mux.HandleFunc("DELETE /open/crons", s.withApp(s.openEachCron(func(ctx context.Context, t edge.Task) error {
		return s.store.DeleteTask(ctx, t.ID)
	})))
	mux.HandleFunc("PUT /open/crons/run", s.withApp(s.openEachCron(func(ctx context.Context, t edge.Task) error {
		_, _, err := s.store.CreateManualRun(ctx, edge.ManualRun{TaskID: t.ID})
		return err
	})))
	mux.HandleFunc("PUT /open/crons/stop", s.withApp(s.openEachCron(s.stopTask)))
	mux.HandleFunc("PUT /open/crons/enable", s.withApp(s.openEachCron(func(ctx context.Context, t edge.Task) error {
		_, err := s.store.SetTaskEnabled(ctx, t.ID, true)
		return err
	})))
	mux.HandleFunc("PUT /open/crons/disable", s.withApp(s.openEachCron(func(ctx context.Context, t edge.Task) error {
		_, err := s.store.SetTaskEnabled(ctx, t.ID, false)
		return err
	})))
	mux.HandleFunc("GET /open/crons/{id}", s.withApp(s.openGetCron))
	mux.HandleFunc("GET /open/crons/{id}/log", s.withApp(s.openCronLog))
}

func (s *Server) stopTask(ctx context.Context, t edge.Task) error {
	page, err := s.store.ListRuns(ctx, edge.RunFilter{TaskID: t.ID, Statuses: qlopen.ActiveStatuses, Limit: edge.MaxPageSize})
	if err != nil {
		return err
	}
	for _, rn := range page.Runs {
		if _, err := s.store.RequestCancel(ctx, rn.ID); err != nil && errs.Code(err) != errs.Conflict {
			return err
		}
	}
	return nil
}

func (s *Server) openCronViews(ctx context.Context, tasks []edge.Task) ([]OpenCron, error) {
	refs := make([]string, len(tasks))
	for i, t := range tasks {
		refs[i] = t.ID
	}
	nums, err := s.access.OpenNums(ctx, edge.OpenKindTask, refs)
	if err != nil {
		return nil, err
	}
	out := make([]OpenCron, len(tasks))
	for i, t := range tasks {
		trs, err := s.store.ListTriggers(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(trs, func(a, b edge.Trigger) int { return cmp.Compare(a.CreatedAtMs, b.CreatedAtMs) })
		v := qlopen.TaskView{Num: nums[t.ID], Name: t.Name, Spec: t.Spec, Enabled: t.Enabled, CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.UpdatedAtMs}
		for _, tr := range trs {
			v.Schedules = append(v.Schedules, tr.Expression)
		}
		runs, err := s.store.ListRuns(ctx, edge.RunFilter{TaskID: t.ID, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(runs.Runs) > 0 {
			rn := runs.Runs[0]
			v.Last = &qlopen.LastRun{Status: rn.Status, CreatedAtMs: rn.CreatedAtMs, FinishedAtMs: rn.FinishedAtMs}
		}
		out[i] = qlopen.CronOf(v)
	}
	return out, nil
}

// openListCrons is QingLong's GET /crons: searchValue matches the name,
// the command or a label (core/find: ASCII letters case-insensitively);
// page (1-based) and size page the matches, oldest task first.
func (s *Server) openListCrons(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	search, err := edge.CheckSearch("searchValue", q.Get("searchValue"))
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	if err := qlopen.CheckListQuery(q.Get("filters"), q.Get("sorter"), q.Get("queryString")); err != nil {
		s.openErr(w, r, err)
		return
	}
	page, size, err := qlopen.Paging(q.Get("page"), q.Get("size"), edge.MaxPageSize)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	var matches []edge.Task
	cursor := ""
	for scanned := 0; scanned < openMaxScan; {
		// The search runs in the store (name, command, labels; core/find),
		// as on the control plane.
		p, err := s.store.ListTasks(r.Context(), edge.TaskFilter{Search: search, Limit: edge.MaxPageSize, Cursor: cursor})
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		matches = append(matches, p.Tasks...)
		scanned += len(p.Tasks)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	total := len(matches)
	if size == 0 {
		if total > openMaxUnpaged {
			openFail(w, http.StatusBadRequest, "more than 1000 crons match: give page and size")
			return
		}
	} else {
		lo := min((page-1)*size, total)
		matches = matches[lo:min(lo+size, total)]
	}
	views, err := s.openCronViews(r.Context(), matches)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, OpenCronPage{Data: views, Total: total})
}

func (s *Server) openTask(r *http.Request, num int64) (edge.Task, error) {
	ids, err := s.resolveOpen(r.Context(), edge.OpenKindTask, []int64{num})
	if err != nil {
		return edge.Task{}, err
	}
	t, err := s.store.GetTask(r.Context(), ids[0])
	if err == nil && t.Deleted() {
		err = errs.NotFoundf("cron %d was deleted", num)
	}
	return t, err
}

func (s *Server) openGetCron(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		openFail(w, http.StatusBadRequest, "id must be a number")
		return
	}
	t, err := s.openTask(r, n)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	s.answerCron(w, r, t)
}

func (s *Server) answerCron(w http.ResponseWriter, r *http.Request, t edge.Task) {
	views, err := s.openCronViews(r.Context(), []edge.Task{t})
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, views[0])
}

// openEachCron applies fn to every task of an array of numeric ids, after
// resolving all of them (an unknown id changes nothing).
func (s *Server) openEachCron(fn func(context.Context, edge.Task) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		nums, err := decodeOpenIDs(w, r)
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		tasks := make([]edge.Task, len(nums))
		for i, n := range nums {
			if tasks[i], err = s.openTask(r, n); err != nil {
				s.openErr(w, r, err)
				return
			}
		}
		for _, t := range tasks {
			if err := fn(r.Context(), t); err != nil {
				s.openErr(w, r, err)
				return
			}
		}
		openOK(w, nil)
	}
}

func (s *Server) openTrigger(expr string) edge.TriggerInput {
	return edge.TriggerInput{Expression: expr, TimeZone: s.openZone, GraceMs: s.grace, Enabled: true}
}

func (s *Server) openCreateCron(w http.ResponseWriter, r *http.Request) {
	var in OpenCronInput
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	scheds, err := qlopen.CheckCronInput(in, edge.MaxTriggersPerTask)
	if err == nil && in.ID != 0 {
		err = errs.Invalidf("id", "not allowed when creating")
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	sp := qlopen.CronSpec(in, nil)
	nt := edge.NewTask{Name: qlopen.CronName(in), Spec: sp, Enabled: true}
	for _, e := range scheds {
		nt.Triggers = append(nt.Triggers, s.openTrigger(e))
	}
	t, err := s.store.CreateTask(r.Context(), nt)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	s.answerCron(w, r, t)
}

// openUpdateCron replaces a task's name and shell command (its other spec
// settings stay) and makes its triggers the given schedules: the first
// ones are updated in place, surplus ones deleted, missing ones created.
func (s *Server) openUpdateCron(w http.ResponseWriter, r *http.Request) {
	var in OpenCronInput
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	scheds, err := qlopen.CheckCronInput(in, edge.MaxTriggersPerTask)
	if err == nil && in.ID == 0 {
		err = errs.Invalidf("id", "is required")
	}
	var t edge.Task
	if err == nil {
		t, err = s.openTask(r, in.ID)
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	for i, e := range scheds {
		if _, err := edge.NormalizeTrigger(s.openTrigger(e)); err != nil {
			s.openErr(w, r, errs.Prefix("schedule["+strconv.Itoa(i)+"]", err))
			return
		}
	}
	sp := qlopen.CronSpec(in, &t.Spec)
	ctx := r.Context()
	if t, err = s.store.UpdateTask(ctx, t.ID, t.Revision, edge.TaskUpdate{Name: qlopen.CronName(in), Spec: sp}); err != nil {
		s.openErr(w, r, err)
		return
	}
	if err := s.replaceTriggers(ctx, t.ID, scheds); err != nil {
		s.openErr(w, r, err)
		return
	}
	s.answerCron(w, r, t)
}

func (s *Server) replaceTriggers(ctx context.Context, taskID string, scheds []string) error {
	trs, err := s.store.ListTriggers(ctx, taskID)
	if err != nil {
		return err
	}
	slices.SortStableFunc(trs, func(a, b edge.Trigger) int { return cmp.Compare(a.CreatedAtMs, b.CreatedAtMs) })
	// Surplus triggers go first, so an update never trips the per-task
	// bound or the duplicate check on its way.
	for _, tr := range trs[min(len(scheds), len(trs)):] {
		if err := s.store.DeleteTrigger(ctx, tr.ID); err != nil {
			return err
		}
	}
	for i, e := range scheds {
		if i < len(trs) {
			tr := trs[i]
			if tr.Expression == e && tr.TimeZone == s.openZone {
				continue
			}
			in := edge.TriggerInput{Expression: e, TimeZone: s.openZone, Misfire: tr.Misfire, GraceMs: tr.GraceMs, Enabled: tr.Enabled}
			if _, err := s.store.UpdateTrigger(ctx, tr.ID, tr.Revision, in); err != nil {
				return err
			}
			continue
		}
		if _, err := s.store.CreateTrigger(ctx, taskID, s.openTrigger(e)); err != nil {
			return err
		}
	}
	return nil
}

// openCronLog is QingLong's GET /crons/{id}/log: the newest run's newest
// attempt's output (its last 256 KiB) as a string, with logStatus
// running, completed or empty beside data.
func (s *Server) openCronLog(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		openFail(w, http.StatusBadRequest, "id must be a number")
		return
	}
	t, err := s.openTask(r, n)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	page, err := s.store.ListRuns(r.Context(), edge.RunFilter{TaskID: t.ID, Limit: 1})
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	type logAnswer struct {
		Code      int    `json:"code"`
		Data      string `json:"data"`
		LogStatus string `json:"logStatus"`
	}
	if len(page.Runs) == 0 || page.Runs[0].AttemptCount == 0 || s.logs == nil {
		httpkit.WriteJSON(w, http.StatusOK, logAnswer{Code: 200, LogStatus: "empty"})
		return
	}
	rn := page.Runs[0]
	att, err := s.store.GetAttempt(r.Context(), edge.AttemptRef{RunID: rn.ID, Number: rn.AttemptCount})
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	status := "completed"
	if !rn.Status.Terminal() {
		status = "running"
	}
	c, err := s.logs.Read(rn.ID, att.Number, max(0, att.LogSize-openLogTail), openLogTail)
	if errs.Code(err) == errs.NotFound || errs.Code(err) == errs.Invalid {
		httpkit.WriteJSON(w, http.StatusOK, logAnswer{Code: 200, LogStatus: status})
		return
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, logAnswer{Code: 200, Data: string(c.Data), LogStatus: status})
}
