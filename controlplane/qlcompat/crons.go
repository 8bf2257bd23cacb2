package qlcompat

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/httpkit"
)

// A cron is a task of the app's project and its triggers (core/qlopen,
// ADR 0048): the same mapping as the edge's.

// Bounds: a search scans at most maxScan tasks of the project; without
// page and size at most maxUnpaged match; a cron has at most maxTriggers
// schedules (the publisher's bound on the triggers made with a task);
// a log answer holds the last logTail bytes of each stream.
const (
	maxScan     = 100_000
	maxUnpaged  = 1000
	maxTriggers = 16
	logTail     = 256 << 10
)

func (h *Handler) cronRoutes() {
	h.mux.HandleFunc("GET /open/crons", h.withApp(h.listCrons))
	h.mux.HandleFunc("POST /open/crons", h.withApp(h.createCron))
	h.mux.HandleFunc("PUT /open/crons", h.withApp(h.updateCron))
	h.mux.HandleFunc("DELETE /open/crons", h.withApp(h.eachCron(func(ctx context.Context, t controlplane.Task) error {
		_, err := h.b.DeleteTask(ctx, controlplane.DeleteInput{TaskID: t.ID})
		return err
	})))
	h.mux.HandleFunc("PUT /open/crons/run", h.withApp(h.withRuns(h.eachCron(func(ctx context.Context, t controlplane.Task) error {
		// QingLong's run has no key: every request is a new run.
		key, err := qlopen.RandomAlnum(32)
		if err == nil {
			_, err = h.runs.RunNow(ctx, controlplane.RunNowInput{TaskID: t.ID, IdempotencyKey: "open-" + key, Actor: controlplane.ActorOf(ctx).ID})
		}
		return err
	}))))
	h.mux.HandleFunc("PUT /open/crons/stop", h.withApp(h.withRuns(h.eachCron(h.stopTask))))
	h.mux.HandleFunc("PUT /open/crons/enable", h.withApp(h.eachCron(h.setEnabled(true))))
	h.mux.HandleFunc("PUT /open/crons/disable", h.withApp(h.eachCron(h.setEnabled(false))))
	h.mux.HandleFunc("GET /open/crons/{id}", h.withApp(h.getCron))
	h.mux.HandleFunc("GET /open/crons/{id}/log", h.withApp(h.withRuns(h.cronLog)))
}

func (h *Handler) withRuns(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.runs == nil {
			fail(w, http.StatusServiceUnavailable, "this server has no run operations")
			return
		}
		next(w, r)
	}
}

func (h *Handler) setEnabled(on bool) func(context.Context, controlplane.Task) error {
	return func(ctx context.Context, t controlplane.Task) error {
		_, err := h.b.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: t.ID, Enabled: on})
		return err
	}
}

func activeStatuses() []string {
	out := make([]string, len(qlopen.ActiveStatuses))
	for i, s := range qlopen.ActiveStatuses {
		out[i] = string(s)
	}
	return out
}

func (h *Handler) stopTask(ctx context.Context, t controlplane.Task) error {
	page, err := h.b.ListRuns(ctx, controlplane.RunListFilter{ProjectID: t.ProjectID, TaskID: t.ID, Statuses: activeStatuses(),
		Page: controlplane.ListRequest{Limit: controlplane.MaxListLimit}})
	if err != nil {
		return err
	}
	for _, rn := range page.Items {
		if _, err := h.runs.CancelRun(ctx, rn.ID, controlplane.ActorOf(ctx).ID); err != nil && errs.Code(err) != errs.Conflict {
			return err
		}
	}
	return nil
}

// triggersOf returns a task's triggers, oldest first.
func (h *Handler) triggersOf(ctx context.Context, taskID string) ([]controlplane.Trigger, error) {
	page, err := h.b.ListTriggers(ctx, taskID, controlplane.ListRequest{Limit: controlplane.MaxListLimit})
	if err != nil {
		return nil, err
	}
	trs := page.Items
	slices.SortStableFunc(trs, func(a, b controlplane.Trigger) int {
		return cmp.Or(cmp.Compare(a.CreatedAtMs, b.CreatedAtMs), strings.Compare(a.ID, b.ID))
	})
	return trs, nil
}

func (h *Handler) views(r *http.Request, tasks []controlplane.Task) ([]qlopen.Cron, error) {
	ctx := r.Context()
	refs := make([]string, len(tasks))
	for i, t := range tasks {
		refs[i] = t.ID
	}
	nums, err := h.apps.OpenNums(ctx, appOf(r).ProjectID, controlplane.OpenKindTask, refs)
	if err != nil {
		return nil, err
	}
	out := make([]qlopen.Cron, len(tasks))
	for i, t := range tasks {
		trs, err := h.triggersOf(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		v := qlopen.TaskView{Num: nums[t.ID], Name: t.Name, Spec: t.Spec, Enabled: t.Enabled, CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.UpdatedAtMs}
		for _, tr := range trs {
			v.Schedules = append(v.Schedules, tr.Expression)
		}
		runs, err := h.b.ListRuns(ctx, controlplane.RunListFilter{ProjectID: t.ProjectID, TaskID: t.ID, Page: controlplane.ListRequest{Limit: 1}})
		if err != nil {
			return nil, err
		}
		if len(runs.Items) > 0 {
			rn := runs.Items[0]
			v.Last = &qlopen.LastRun{Status: run.RunStatus(rn.Status), CreatedAtMs: rn.CreatedAtMs, FinishedAtMs: rn.FinishedAtMs}
		}
		out[i] = qlopen.CronOf(v)
	}
	return out, nil
}

// listCrons is QingLong's GET /crons over the app's project.
func (h *Handler) listCrons(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	search := q.Get("searchValue")
	if err := qlopen.CheckListQuery(q.Get("filters"), q.Get("sorter"), q.Get("queryString")); err != nil {
		h.fault(w, r, err)
		return
	}
	page, size, err := qlopen.Paging(q.Get("page"), q.Get("size"), controlplane.MaxListLimit)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	var matches []controlplane.Task
	cursor := ""
	for scanned := 0; scanned < maxScan; {
		// The search runs in the database (name, command; core/find).
		p, err := h.b.FindTasks(r.Context(), appOf(r).ProjectID, search, controlplane.ListRequest{Limit: controlplane.MaxListLimit, Cursor: cursor})
		if err != nil {
			h.fault(w, r, err)
			return
		}
		matches = append(matches, p.Items...)
		scanned += len(p.Items)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	slices.SortStableFunc(matches, func(a, b controlplane.Task) int {
		return cmp.Or(cmp.Compare(a.CreatedAtMs, b.CreatedAtMs), strings.Compare(a.ID, b.ID))
	})
	total := len(matches)
	if size == 0 {
		if total > maxUnpaged {
			fail(w, http.StatusBadRequest, "more than 1000 crons match: give page and size")
			return
		}
	} else {
		lo := min((page-1)*size, total)
		matches = matches[lo:min(lo+size, total)]
	}
	views, err := h.views(r, matches)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, qlopen.CronPage{Data: views, Total: total})
}

// task resolves a cron number of the app's project to its live task.
func (h *Handler) task(r *http.Request, num int64) (controlplane.Task, error) {
	ids, err := h.resolve(r, controlplane.OpenKindTask, []int64{num})
	if err != nil {
		return controlplane.Task{}, err
	}
	t, err := h.b.GetTask(r.Context(), ids[0])
	if errs.Code(err) == errs.NotFound || (err == nil && (t.DeletedAtMs != 0 || t.ProjectID != appOf(r).ProjectID)) {
		return controlplane.Task{}, errs.NotFoundf("cron %d was deleted", num)
	}
	return t, err
}

func pathNum(r *http.Request) (int64, error) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, errs.Invalidf("id", "must be a number")
	}
	return n, nil
}

func (h *Handler) getCron(w http.ResponseWriter, r *http.Request) {
	n, err := pathNum(r)
	var t controlplane.Task
	if err == nil {
		t, err = h.task(r, n)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	h.answer(w, r, t)
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request, t controlplane.Task) {
	views, err := h.views(r, []controlplane.Task{t})
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, views[0])
}

// eachCron applies fn to every task of an array of numbers after
// resolving all of them (an unknown number changes nothing).
func (h *Handler) eachCron(fn func(context.Context, controlplane.Task) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		nums, err := decodeIDs(w, r)
		if err != nil {
			h.fault(w, r, err)
			return
		}
		tasks := make([]controlplane.Task, len(nums))
		for i, n := range nums {
			if tasks[i], err = h.task(r, n); err != nil {
				h.fault(w, r, err)
				return
			}
		}
		for _, t := range tasks {
			if err := fn(r.Context(), t); err != nil {
				h.fault(w, r, err)
				return
			}
		}
		ok(w, nil)
	}
}

func (h *Handler) trigger(taskID, expr string) controlplane.TriggerInput {
	return controlplane.TriggerInput{TaskID: taskID, Expression: expr, TimeZone: h.zone}
}

func (h *Handler) createCron(w http.ResponseWriter, r *http.Request) {
	var in qlopen.CronInput
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	scheds, err := qlopen.CheckCronInput(in, maxTriggers)
	if err == nil && in.ID != 0 {
		err = errs.Invalidf("id", "not allowed when creating")
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ti := controlplane.TaskInput{ProjectID: appOf(r).ProjectID, Name: qlopen.CronName(in), Spec: qlopen.CronSpec(in, nil)}
	for _, e := range scheds {
		ti.Triggers = append(ti.Triggers, h.trigger("", e))
	}
	t, err := h.b.PublishTask(r.Context(), ti)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	h.answer(w, r, t)
}

// updateCron replaces a task's name and shell command (its other spec
// settings stay, a new revision) and makes its triggers the given
// schedules: surplus ones deleted, the first ones updated in place,
// missing ones created.
func (h *Handler) updateCron(w http.ResponseWriter, r *http.Request) {
	var in qlopen.CronInput
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	scheds, err := qlopen.CheckCronInput(in, maxTriggers)
	if err == nil && in.ID == 0 {
		err = errs.Invalidf("id", "is required")
	}
	var t controlplane.Task
	if err == nil {
		t, err = h.task(r, in.ID)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ctx := r.Context()
	t, err = h.b.PublishTask(ctx, controlplane.TaskInput{TaskID: t.ID, ExpectedRevision: t.Revision, Name: qlopen.CronName(in), Spec: qlopen.CronSpec(in, &t.Spec)})
	if err == nil {
		err = h.replaceTriggers(ctx, t.ID, scheds)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	h.answer(w, r, t)
}

func (h *Handler) replaceTriggers(ctx context.Context, taskID string, scheds []string) error {
	trs, err := h.triggersOf(ctx, taskID)
	if err != nil {
		return err
	}
	for _, tr := range trs[min(len(scheds), len(trs)):] {
		if _, err := h.b.DeleteTrigger(ctx, controlplane.DeleteInput{TaskID: taskID, TriggerID: tr.ID}); err != nil {
			return err
		}
	}
	for i, e := range scheds {
		if i >= len(trs) {
			if _, err := h.b.PublishTrigger(ctx, h.trigger(taskID, e)); err != nil {
				return errs.Prefix("schedule["+strconv.Itoa(i)+"]", err)
			}
			continue
		}
		tr := trs[i]
		if tr.Expression == e && tr.TimeZone == h.zone {
			continue
		}
		in := controlplane.TriggerInput{TaskID: taskID, TriggerID: tr.ID, ExpectedRevision: tr.Revision, Expression: e, TimeZone: h.zone,
			Misfire: tr.Misfire, GraceMs: &tr.GraceMs, Enabled: &tr.Enabled}
		if _, err := h.b.PublishTrigger(ctx, in); err != nil {
			return errs.Prefix("schedule["+strconv.Itoa(i)+"]", err)
		}
	}
	return nil
}

// cronLog is QingLong's GET /crons/{id}/log: the newest run's newest
// attempt's output (the last 256 KiB of stdout, then of stderr), with
// logStatus running, completed or empty.
func (h *Handler) cronLog(w http.ResponseWriter, r *http.Request) {
	n, err := pathNum(r)
	var t controlplane.Task
	if err == nil {
		t, err = h.task(r, n)
	}
	var page controlplane.ListPage[controlplane.Run]
	if err == nil {
		page, err = h.b.ListRuns(r.Context(), controlplane.RunListFilter{ProjectID: t.ProjectID, TaskID: t.ID, Page: controlplane.ListRequest{Limit: 1}})
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	type logAnswer struct {
		Code      int    `json:"code"`
		Data      string `json:"data"`
		LogStatus string `json:"logStatus"`
	}
	if len(page.Items) == 0 || page.Items[0].AttemptCount == 0 {
		httpkit.WriteJSON(w, http.StatusOK, logAnswer{Code: 200, LogStatus: "empty"})
		return
	}
	rn := page.Items[0]
	status := "completed"
	if !run.RunStatus(rn.Status).Terminal() {
		status = "running"
	}
	var text strings.Builder
	for _, stream := range []string{"stdout", "stderr"} {
		head, err := h.runs.ReadLog(r.Context(), rn.ID, 0, stream, 0, 1)
		if errs.Code(err) == errs.NotFound {
			continue
		}
		if err != nil {
			h.fault(w, r, err)
			return
		}
		if head.Stored == 0 {
			continue
		}
		tail, err := h.runs.ReadLog(r.Context(), rn.ID, 0, stream, max(0, head.Size-logTail), logTail)
		if err != nil {
			h.fault(w, r, err)
			return
		}
		text.Write(tail.Data)
	}
	httpkit.WriteJSON(w, http.StatusOK, logAnswer{Code: 200, Data: text.String(), LogStatus: status})
}
