package httpapi

import (
	"context"
	"net/http"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// taskTrigger resolves {task} and {trigger} and checks that the trigger
// belongs to the task, so a trigger id under the wrong task is a 404.
func (s *Server) taskTrigger(ctx context.Context, r *http.Request) (edge.Task, edge.Trigger, error) {
	t, err := s.resolveTask(ctx, r.PathValue("task"))
	if err != nil {
		return t, edge.Trigger{}, err
	}
	tr, err := s.store.GetTrigger(ctx, r.PathValue("trigger"))
	if err != nil {
		return t, tr, err
	}
	if tr.TaskID != t.ID {
		return t, edge.Trigger{}, errs.NotFoundf("task %s has no trigger %s", t.ID, r.PathValue("trigger"))
	}
	return t, tr, nil
}

func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request) {
	_, triggers, err := s.taskWithTriggers(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(triggers, "", func(t edge.Trigger) Trigger { return triggerView(t, 0) }))
}

func (s *Server) createTrigger(w http.ResponseWriter, r *http.Request) {
	var req TriggerRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	t, err := s.resolveTask(r.Context(), r.PathValue("task"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	tr, err := s.store.CreateTrigger(r.Context(), t.ID, s.triggerInput(req))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/api/v1/tasks/"+t.ID+"/triggers/"+tr.ID)
	httpkit.WriteJSON(w, http.StatusCreated, triggerView(tr, 0))
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request) {
	_, tr, err := s.taskTrigger(r.Context(), r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, triggerView(tr, 0))
}

func (s *Server) updateTrigger(w http.ResponseWriter, r *http.Request) {
	var req UpdateTriggerRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := requireRevision(req.ExpectedRevision); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	_, tr, err := s.taskTrigger(r.Context(), r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	tr, err = s.store.UpdateTrigger(r.Context(), tr.ID, req.ExpectedRevision, s.triggerInput(req.TriggerRequest))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, triggerView(tr, 0))
}

func (s *Server) deleteTrigger(w http.ResponseWriter, r *http.Request) {
	_, tr, err := s.taskTrigger(r.Context(), r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := s.store.DeleteTrigger(r.Context(), tr.ID); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
