package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// OpenCron is QingLong's cron row (back/data/cron.ts) for a ql3 task
// (ADR 0048): command is the task's shell command, schedule its oldest
// trigger's expression and extra_schedules the others. status 0 running,
// 1 idle, 3 queued; isDisabled mirrors the task's switch. Times of the
// last run are epoch seconds (last_execution_time, its start) and seconds
// (last_running_time, its duration), as QingLong keeps them.
type OpenCron struct {
	ID                     int64          `json:"id"`
	Name                   string         `json:"name"`
	Command                string         `json:"command"`
	Schedule               string         `json:"schedule"`
	Timestamp              string         `json:"timestamp"`
	Saved                  bool           `json:"saved"`
	Status                 int            `json:"status"`
	IsSystem               int            `json:"isSystem"`
	Pid                    *int           `json:"pid"`
	IsDisabled             int            `json:"isDisabled"`
	LogPath                string         `json:"log_path"`
	IsPinned               int            `json:"isPinned"`
	Labels                 []string       `json:"labels"`
	LastRunningTime        int64          `json:"last_running_time"`
	LastExecutionTime      int64          `json:"last_execution_time"`
	SubID                  *int64         `json:"sub_id"`
	ExtraSchedules         []OpenSchedule `json:"extra_schedules"`
	TaskBefore             *string        `json:"task_before"`
	TaskAfter              *string        `json:"task_after"`
	LogName                *string        `json:"log_name"`
	AllowMultipleInstances int            `json:"allow_multiple_instances"`
	WorkDir                *string        `json:"work_dir"`
	CreatedAt              string         `json:"createdAt"`
	UpdatedAt              string         `json:"updatedAt"`
}

// OpenSchedule is one element of extra_schedules.
type OpenSchedule struct {
	Schedule string `json:"schedule"`
}

// OpenCronInput is the body of POST and PUT /open/crons: QingLong's
// commonCronSchema (back/validation/schedule.ts) plus id on PUT. Fields
// ql3 cannot express are refused when set, never dropped (ADR 0048).
type OpenCronInput struct {
	ID                     int64          `json:"id,omitempty"`
	Name                   string         `json:"name"`
	Command                string         `json:"command"`
	Schedule               string         `json:"schedule"`
	Labels                 []string       `json:"labels"`
	SubID                  *int64         `json:"sub_id"`
	ExtraSchedules         []OpenSchedule `json:"extra_schedules"`
	TaskBefore             *string        `json:"task_before"`
	TaskAfter              *string        `json:"task_after"`
	LogName                *string        `json:"log_name"`
	AllowMultipleInstances *int           `json:"allow_multiple_instances"`
	WorkDir                *string        `json:"work_dir"`
}

// OpenCronPage is data of GET /open/crons.
type OpenCronPage struct {
	Data  []OpenCron `json:"data"`
	Total int        `json:"total"`
}

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

// activeStatuses are the run states QingLong calls running or queued.
var activeStatuses = []run.RunStatus{run.RunCreated, run.RunQueued, run.RunDispatching, run.RunRunning, run.RunRetryWait}

func (s *Server) stopTask(ctx context.Context, t edge.Task) error {
	page, err := s.store.ListRuns(ctx, edge.RunFilter{TaskID: t.ID, Statuses: activeStatuses, Limit: edge.MaxPageSize})
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

// taskCommand is what the Open API shows as a task's command: a shell
// spec's command, an argv spec's words joined by spaces.
func taskCommand(c spec.Command) string {
	switch {
	case c.Shell != nil:
		return c.Shell.Command
	case c.Argv != nil:
		return strings.Join(append([]string{c.Argv.File}, c.Argv.Args...), " ")
	}
	return ""
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
		v := OpenCron{ID: nums[t.ID], Name: t.Name, Command: taskCommand(t.Spec), Status: 1, Labels: []string{},
			ExtraSchedules: []OpenSchedule{}, Saved: true, Timestamp: qlStamp(t.UpdatedAtMs),
			CreatedAt: qlTime(t.CreatedAtMs), UpdatedAt: qlTime(t.UpdatedAtMs)}
		for j, tr := range trs {
			if j == 0 {
				v.Schedule = tr.Expression
			} else {
				v.ExtraSchedules = append(v.ExtraSchedules, OpenSchedule{Schedule: tr.Expression})
			}
		}
		if !t.Enabled {
			v.IsDisabled = 1
		}
		if t.Spec.Concurrency == spec.ConcurrencyAllow {
			v.AllowMultipleInstances = 1
		}
		runs, err := s.store.ListRuns(ctx, edge.RunFilter{TaskID: t.ID, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(runs.Runs) > 0 {
			rn := runs.Runs[0]
			switch rn.Status {
			case run.RunRunning, run.RunDispatching:
				v.Status = 0
			case run.RunCreated, run.RunQueued, run.RunRetryWait:
				v.Status = 3
			}
			v.LastExecutionTime = rn.CreatedAtMs / 1000
			if rn.FinishedAtMs != 0 {
				v.LastRunningTime = (rn.FinishedAtMs - rn.CreatedAtMs) / 1000
			}
		}
		out[i] = v
	}
	return out, nil
}

// openListCrons is QingLong's GET /crons: searchValue matches the name or
// the command (case-insensitively); page (1-based) and size page the
// matches, oldest task first.
func (s *Server) openListCrons(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	search := strings.ToLower(q.Get("searchValue"))
	// QingLong's panel sends filters={} (and a sorter when a column is
	// sorted); ql3 has neither, so anything else is refused, not ignored.
	if f := q.Get("filters"); (f != "" && f != "{}") || q.Get("sorter") != "" || q.Get("queryString") != "" {
		openFail(w, http.StatusBadRequest, "filters, sorter and queryString are not supported by ql3-edge; use searchValue")
		return
	}
	page, size := 0, 0
	if q.Get("page") != "" || q.Get("size") != "" {
		var err1, err2 error
		page, err1 = strconv.Atoi(q.Get("page"))
		size, err2 = strconv.Atoi(q.Get("size"))
		if err1 != nil || err2 != nil || page < 1 || size < 1 || size > edge.MaxPageSize {
			openFail(w, http.StatusBadRequest, "page must be >= 1 and size 1..200, given together")
			return
		}
	}
	var matches []edge.Task
	cursor := ""
	for scanned := 0; scanned < openMaxScan; {
		p, err := s.store.ListTasks(r.Context(), edge.TaskFilter{Limit: edge.MaxPageSize, Cursor: cursor})
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		for _, t := range p.Tasks {
			if search == "" || strings.Contains(strings.ToLower(t.Name), search) ||
				strings.Contains(strings.ToLower(taskCommand(t.Spec)), search) {
				matches = append(matches, t)
			}
		}
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

// checkCronInput refuses what a ql3 task cannot express (ADR 0048) and
// returns the schedules in order (schedule first).
func checkCronInput(in OpenCronInput) ([]string, error) {
	refuse := func(field, why string) error { return errs.Invalidf(field, "ql3 cannot express this: %s", why) }
	switch {
	case strings.TrimSpace(in.Command) == "":
		return nil, errs.Invalidf("command", "is required")
	case strings.TrimSpace(in.Schedule) == "":
		return nil, errs.Invalidf("schedule", "is required")
	case strings.HasPrefix(in.Schedule, "@once") || strings.HasPrefix(in.Schedule, "@boot"):
		return nil, refuse("schedule", "@once and @boot tasks have no ql3 trigger; use run now")
	case len(in.Labels) > 0:
		return nil, refuse("labels", "labels are not part of a ql3-edge task yet")
	case in.SubID != nil:
		return nil, refuse("sub_id", "subscriptions are not served by the Open API")
	case in.TaskBefore != nil && *in.TaskBefore != "", in.TaskAfter != nil && *in.TaskAfter != "":
		return nil, refuse("task_before", "put the commands into command")
	case in.LogName != nil && *in.LogName != "":
		return nil, refuse("log_name", "ql3 keeps each attempt's log itself")
	case in.WorkDir != nil && *in.WorkDir != "":
		return nil, refuse("work_dir", "use a cd in command")
	case in.AllowMultipleInstances != nil && *in.AllowMultipleInstances != 0 && *in.AllowMultipleInstances != 1:
		return nil, errs.Invalidf("allow_multiple_instances", "must be 0 or 1")
	case len(in.ExtraSchedules) > edge.MaxTriggersPerTask-1:
		return nil, errs.Invalidf("extra_schedules", "at most %d", edge.MaxTriggersPerTask-1)
	}
	out := []string{strings.TrimSpace(in.Schedule)}
	for _, e := range in.ExtraSchedules {
		out = append(out, strings.TrimSpace(e.Schedule))
	}
	return out, nil
}

// cronName is the task name of a cron: its name, or (QingLong allows an
// empty name) its command cut to the name limit.
func cronName(in OpenCronInput) string {
	if n := strings.TrimSpace(in.Name); n != "" {
		return n
	}
	c := []rune(strings.Join(strings.Fields(in.Command), " "))
	return string(c[:min(len(c), edge.MaxTaskName)])
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
	scheds, err := checkCronInput(in)
	if err == nil && in.ID != 0 {
		err = errs.Invalidf("id", "not allowed when creating")
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	sp := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: in.Command, Shell: spec.ShellBash}}.WithDefaults()
	if in.AllowMultipleInstances != nil && *in.AllowMultipleInstances == 1 {
		sp.Concurrency = spec.ConcurrencyAllow
	}
	nt := edge.NewTask{Name: cronName(in), Spec: sp, Enabled: true}
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
	scheds, err := checkCronInput(in)
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
	sp := t.Spec
	sp.Argv, sp.Shell = nil, &spec.Shell{Command: in.Command, Shell: spec.ShellBash}
	if in.AllowMultipleInstances != nil {
		sp.Concurrency = spec.DefaultConcurrency
		if *in.AllowMultipleInstances == 1 {
			sp.Concurrency = spec.ConcurrencyAllow
		}
	}
	ctx := r.Context()
	if t, err = s.store.UpdateTask(ctx, t.ID, t.Revision, edge.TaskUpdate{Name: cronName(in), Spec: sp}); err != nil {
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
