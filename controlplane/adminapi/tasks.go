package adminapi

import (
	"context"
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/find"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/httpkit"
)

func projectInput(req CreateProjectRequest) controlplane.ProjectInput {
	return controlplane.ProjectInput{MutationID: req.MutationID, Name: req.Name}
}

func archiveInput(projectID string, req ArchiveProjectRequest) controlplane.ArchiveProjectInput {
	return controlplane.ArchiveProjectInput{MutationID: req.MutationID, ProjectID: projectID, ExpectedVersion: req.ExpectedVersion}
}

// decodeSpec decodes a task spec strictly; errors name "spec.<field>".
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

// resolveProject finds a project by id or name for a body or query field.
func (s *Server) resolveProject(ctx context.Context, field, ref string) (controlplane.Project, error) {
	if ref == "" {
		return controlplane.Project{}, errs.Invalidf(field, "required: a project id or name")
	}
	p, err := s.b.GetProject(ctx, ref)
	if errs.Code(err) == errs.NotFound {
		return p, errs.Invalidf(field, "no project with id or name %.130q", ref)
	}
	return p, err
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	var req CreateTaskRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	cmd, err := decodeSpec(req.Spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.resolveProject(r.Context(), "project", req.Project)
	if err == nil {
		// Checked before the task is made: labels are set after it.
		_, err = find.CheckLabels(req.Labels)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in := controlplane.TaskInput{MutationID: req.MutationID, ProjectID: p.ID, Name: req.Name, Enabled: req.Enabled, Spec: cmd}
	for _, tr := range req.Triggers {
		in.Triggers = append(in.Triggers, triggerInput(tr))
	}
	t, err := s.b.PublishTask(r.Context(), in)
	if err == nil && len(req.Labels) > 0 {
		triggers := t.Triggers
		t, err = s.b.SetTaskLabels(r.Context(), t.ID, req.Labels)
		t.Triggers = triggers
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := Task{TaskRecord: TaskRecord(t)}
	for _, tr := range t.Triggers {
		v.Triggers = append(v.Triggers, triggerView(tr))
	}
	w.Header().Set("Location", "/api/v1/tasks/"+t.ID)
	httpkit.WriteJSON(w, http.StatusCreated, v)
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	triggers, err := s.allTriggers(r.Context(), t.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, Task{TaskRecord: TaskRecord(t), Triggers: triggers})
}

// maxTriggersShown bounds the triggers embedded in a task response.
const maxTriggersShown = controlplane.MaxListLimit

func (s *Server) allTriggers(ctx context.Context, taskID string) ([]Trigger, error) {
	page, err := s.b.ListTriggers(ctx, taskID, controlplane.ListRequest{Limit: maxTriggersShown})
	if err != nil {
		return nil, err
	}
	out := make([]Trigger, 0, len(page.Items))
	for _, tr := range page.Items {
		out = append(out, triggerView(tr))
	}
	return out, nil
}

func (s *Server) updateTask(w http.ResponseWriter, r *http.Request) {
	var req UpdateTaskRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := requireRevision(req.ExpectedRevision); err != nil {
		s.fail(w, r, err)
		return
	}
	cmd, err := decodeSpec(req.Spec)
	if err == nil && req.Labels != nil {
		_, err = find.CheckLabels(*req.Labels) // before the new revision
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err = s.b.PublishTask(r.Context(), controlplane.TaskInput{MutationID: req.MutationID, TaskID: t.ID,
		ExpectedRevision: req.ExpectedRevision, Name: req.Name, Enabled: req.Enabled, Spec: cmd})
	if err == nil && req.Labels != nil {
		t, err = s.b.SetTaskLabels(r.Context(), t.ID, *req.Labels)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, Task{TaskRecord: TaskRecord(t)})
}

func (s *Server) patchTask(w http.ResponseWriter, r *http.Request) {
	var req PatchTaskRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case req.Enabled == nil && req.Labels == nil:
		s.fail(w, r, errs.Invalidf("enabled", "required (or labels)"))
	case req.Labels != nil:
		s.applyLabels(w, r, req.MutationID, *req.Labels, req.Enabled)
	default:
		s.applyEnabled(w, r, req.MutationID, *req.Enabled)
	}
}

func (s *Server) setEnabled(enabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req EnableRequest
		if err := s.decodeOptionalBody(w, r, &req); err != nil {
			s.fail(w, r, err)
			return
		}
		s.applyEnabled(w, r, req.MutationID, enabled)
	}
}

func (s *Server) applyEnabled(w http.ResponseWriter, r *http.Request, mutationID string, enabled bool) {
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err = s.b.SetTaskEnabled(r.Context(), controlplane.TaskEnabledInput{MutationID: mutationID, TaskID: t.ID, Enabled: enabled})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, Task{TaskRecord: TaskRecord(t)})
}

func triggerInput(req TriggerRequest) controlplane.TriggerInput {
	return controlplane.TriggerInput{MutationID: req.MutationID, Name: req.Name, Expression: req.Expression,
		TimeZone: req.TimeZone, Misfire: schedule.MisfirePolicy(req.Misfire), GraceMs: req.GraceMs, Enabled: req.Enabled}
}

// taskTrigger resolves {task} and {trigger}; a trigger under the wrong task
// is a 404.
func (s *Server) taskTrigger(r *http.Request) (controlplane.Trigger, error) {
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		return controlplane.Trigger{}, err
	}
	tr, err := s.b.GetTrigger(r.Context(), r.PathValue("trigger"))
	if err != nil {
		return tr, err
	}
	if tr.TaskID != t.ID {
		return controlplane.Trigger{}, errs.NotFoundf("task %s has no trigger %.64q", t.ID, r.PathValue("trigger"))
	}
	return tr, nil
}

func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.b.ListTriggers(r.Context(), t.ID, pr)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := List[Trigger]{Items: make([]Trigger, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, tr := range page.Items {
		out.Items = append(out.Items, triggerView(tr))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createTrigger(w http.ResponseWriter, r *http.Request) {
	var req TriggerRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in := triggerInput(req)
	in.TaskID = t.ID
	tr, err := s.b.PublishTrigger(r.Context(), in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/tasks/"+t.ID+"/triggers/"+tr.ID)
	httpkit.WriteJSON(w, http.StatusCreated, triggerView(tr))
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request) {
	tr, err := s.taskTrigger(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, triggerView(tr))
}

func (s *Server) updateTrigger(w http.ResponseWriter, r *http.Request) {
	var req UpdateTriggerRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := requireRevision(req.ExpectedRevision); err != nil {
		s.fail(w, r, err)
		return
	}
	tr, err := s.taskTrigger(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in := triggerInput(req.TriggerRequest)
	in.TaskID, in.TriggerID, in.ExpectedRevision = tr.TaskID, tr.ID, req.ExpectedRevision
	tr, err = s.b.PublishTrigger(r.Context(), in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, triggerView(tr))
}

// requireRevision checks the optimistic-concurrency field every update
// carries.
func requireRevision(expected int64) error {
	if expected < 1 {
		return errs.Invalidf("expectedRevision", "required: the revision this update replaces (>= 1)")
	}
	return nil
}
