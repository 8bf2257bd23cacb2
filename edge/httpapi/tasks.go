package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"strconv"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

func notFoundRoute(r *http.Request) error {
	return errs.NotFoundf("no route for %s %s", r.Method, r.URL.Path)
}

// resolveTask finds a task by id, then by the name of a live task.
func (s *Server) resolveTask(ctx context.Context, ref string) (edge.Task, error) {
	t, err := s.store.GetTask(ctx, ref)
	if errs.Code(err) != errs.NotFound {
		return t, err
	}
	t, err = s.store.GetTaskByName(ctx, ref)
	if errs.Code(err) == errs.NotFound {
		return t, errs.NotFoundf("no task with id or name %q", ref)
	}
	return t, err
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	var req CreateTaskRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	in, err := newTaskInput(req)
	if err == nil {
		err = s.checkInterpreter(in.Spec)
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	for _, tr := range req.Triggers {
		in.Triggers = append(in.Triggers, s.triggerInput(tr))
	}
	// One transaction: the task and all its triggers, or nothing. The
	// store validates it all (edge.CheckNewTask) before writing.
	ctx := r.Context()
	task, err := s.store.CreateTask(ctx, in)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	created, err := s.store.ListTriggers(ctx, task.ID)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/api/v1/tasks/"+task.ID)
	httpkit.WriteJSON(w, http.StatusCreated, taskView(task, created, s.now().UnixMilli()))
}

// newTaskInput parses a create request; the rules are the store's
// (edge.CheckNewTask).
func newTaskInput(req CreateTaskRequest) (edge.NewTask, error) {
	cmd, err := decodeSpec(req.Spec)
	if err != nil {
		return edge.NewTask{}, err
	}
	enabled := req.Enabled == nil || *req.Enabled
	return edge.NewTask{Name: req.Name, Spec: cmd, Enabled: enabled, Labels: req.Labels}, nil
}

func decodeSpec(raw []byte) (spec.Command, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return spec.Command{}, errs.Invalidf("spec", "required")
	}
	cmd, err := spec.Decode(raw)
	if err != nil {
		return spec.Command{}, errs.Prefix("spec", err)
	}
	return cmd, nil
}

// triggerInput maps a trigger request onto the store's input, with this
// server's default grace; the store validates it (edge.NormalizeTrigger).
func (s *Server) triggerInput(tr TriggerRequest) edge.TriggerInput {
	return edge.TriggerInput{
		Expression: tr.Expression,
		TimeZone:   tr.TimeZone,
		Misfire:    schedule.MisfirePolicy(tr.Misfire),
		GraceMs:    cmp.Or(tr.GraceMs, s.grace),
		Enabled:    tr.Enabled == nil || *tr.Enabled,
	}
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, triggers, err := s.taskWithTriggers(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, taskView(t, triggers, s.now().UnixMilli()))
}

// taskWithTriggers resolves the {task} path value (id or live name) and
// lists the task's triggers.
func (s *Server) taskWithTriggers(r *http.Request) (edge.Task, []edge.Trigger, error) {
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		return edge.Task{}, nil, err
	}
	triggers, err := s.store.ListTriggers(r.Context(), t.ID)
	return t, triggers, err
}

// requireRevision checks an update's expectedRevision, which guards it
// against a concurrent edit.
func requireRevision(expected int64) error {
	if expected < 1 {
		return errs.Invalidf("expectedRevision", "required: the revision this update replaces (>= 1)")
	}
	return nil
}

func (s *Server) updateTask(w http.ResponseWriter, r *http.Request) {
	var req UpdateTaskRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := requireRevision(req.ExpectedRevision); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	cmd, err := decodeSpec(req.Spec)
	if err == nil {
		err = s.checkInterpreter(cmd)
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	t, err = s.store.UpdateTask(r.Context(), t.ID, req.ExpectedRevision, edge.TaskUpdate{Name: req.Name, Spec: cmd, Labels: req.Labels})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, taskView(t, nil, 0))
}

func (s *Server) patchTask(w http.ResponseWriter, r *http.Request) {
	var req PatchTaskRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	switch {
	case req.Enabled == nil && req.Labels == nil:
		httpkit.Fail(w, r, s.log, errs.Invalidf("enabled", "required (or labels)"))
	case req.Labels == nil:
		s.applyEnabled(w, r, *req.Enabled)
	default:
		s.applyLabels(w, r, *req.Labels, req.Enabled)
	}
}

func (s *Server) setEnabled(enabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var none struct{}
		if err := httpkit.DecodeOptionalJSON(w, r, s.maxBody, &none); err != nil {
			httpkit.Fail(w, r, s.log, err)
			return
		}
		s.applyEnabled(w, r, enabled)
	}
}

func (s *Server) applyEnabled(w http.ResponseWriter, r *http.Request, enabled bool) {
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	t, err = s.store.SetTaskEnabled(r.Context(), t.ID, enabled)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, taskView(t, nil, 0))
}

func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := s.store.DeleteTask(r.Context(), t.ID); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// queryLimit reads ?limit= (0 when absent: the store's default).
func queryLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > edge.MaxPageSize {
		return 0, errs.Invalidf("limit", "must be 1..%d, got %q", edge.MaxPageSize, v)
	}
	return n, nil
}

func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errs.Invalidf(name, "must be true/false or 1/0, got %q", v)
	}
	return b, nil
}

func queryInt64(r *http.Request, name string, min int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return 0, errs.Invalidf(name, "must be an integer >= %d, got %q", min, v)
	}
	return n, nil
}
