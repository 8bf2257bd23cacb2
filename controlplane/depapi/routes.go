package depapi

import (
	"context"
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/httpkit"
)

// A project's dependencies (issue 24, ADR 0062): packages its scripts need
// on the workers the dependency's placement labels select. Each action is
// one Run per matching online worker, of that worker's system task
// "dependency KIND NAME @ WORKER" (the shell line of core/depcmd, pinned by
// placement.WorkerLabel); each worker's result is recorded when its Run
// ends.
//
//	GET    /api/v1/projects/{project}/dependencies                   list with per-worker installs (?kind=)
//	POST   /api/v1/projects/{project}/dependencies                   {kind, name, version, labels}: record and install
//	GET    /api/v1/projects/{project}/dependencies/{id}              one, with its installs
//	DELETE /api/v1/projects/{project}/dependencies/{id}              forget it and its system tasks (nothing is uninstalled)
//	POST   /api/v1/projects/{project}/dependencies/{id}/install | /reinstall | /remove
//	POST   /api/v1/projects/{project}/dependencies/{id}/cancel       cancel the Runs not ended
//	GET|PUT /api/v1/projects/{project}/dependencies/settings/{kind}  registry (mirror) and proxy

const depBase = "/api/v1/projects/{project}/dependencies"

// depTimeoutMs bounds one install Run (the edge's: 30 minutes).
const depTimeoutMs = 30 * 60 * 1000

// depTaskLabels mark the dependencies' system tasks (the edge's).
var depTaskLabels = []string{"system", "dependency"}

func (s *API) depRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET "+depBase, s.withDeps(s.listDeps))
	mux.HandleFunc("POST "+depBase, s.withDeps(s.createDep))
	mux.HandleFunc("GET "+depBase+"/{id}", s.withDeps(s.getDep))
	mux.HandleFunc("DELETE "+depBase+"/{id}", s.withDeps(s.deleteDep))
	for _, a := range []string{depcmd.Install, depcmd.Reinstall, depcmd.Remove} {
		mux.HandleFunc("POST "+depBase+"/{id}/"+a, s.withDeps(s.depAction(a)))
	}
	mux.HandleFunc("POST "+depBase+"/{id}/cancel", s.withDeps(s.cancelDep))
	mux.HandleFunc("GET "+depBase+"/settings/{kind}", s.withDeps(s.getDepSettings))
	mux.HandleFunc("PUT "+depBase+"/settings/{kind}", s.withDeps(s.putDepSettings))
}

type depHandler func(w http.ResponseWriter, r *http.Request, p controlplane.Project)

// withDeps answers 503 without a dependency store and resolves {project}.
func (s *API) withDeps(h depHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no dependency store"))
			return
		}
		p, err := s.b.GetProject(r.Context(), r.PathValue("project"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, p)
	}
}

// projectDep reads {id} and checks it belongs to p (another project's is
// not found).
func (s *API) projectDep(r *http.Request, p controlplane.Project) (controlplane.Dependency, error) {
	d, err := s.deps.GetDependency(r.Context(), r.PathValue("id"))
	if err == nil && d.ProjectID != p.ID {
		err = errs.NotFoundf("no dependency %s in project %s", r.PathValue("id"), p.Name)
	}
	return d, err
}

func (s *API) depView(ctx context.Context, d controlplane.Dependency) (Dependency, error) {
	ins, err := s.deps.ListDependencyInstalls(ctx, d.ID)
	if ins == nil {
		ins = []controlplane.DependencyInstall{}
	}
	return Dependency{Dependency: d, Installs: ins}, err
}

func (s *API) listDeps(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	list, err := s.deps.ListDependencies(r.Context(), p.ID, r.URL.Query().Get("kind"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	installs, err := s.deps.ListProjectInstalls(r.Context(), p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := DependencyList{Dependencies: make([]Dependency, len(list))}
	for i, d := range list {
		ins := installs[d.ID]
		if ins == nil {
			ins = []controlplane.DependencyInstall{}
		}
		out.Dependencies[i] = Dependency{Dependency: d, Installs: ins}
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *API) getDep(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	d, err := s.projectDep(r, p)
	if err == nil {
		var v Dependency
		if v, err = s.depView(r.Context(), d); err == nil {
			httpkit.WriteJSON(w, http.StatusOK, v)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *API) createDep(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	var req DependencyRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.deps.CreateDependency(r.Context(), controlplane.DependencyInput{ProjectID: p.ID, Kind: req.Kind, Name: req.Name,
		Version: req.Version, Labels: req.Labels})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeDepAction(w, r, p, d, depcmd.Install, false)
}

func (s *API) depAction(action string) depHandler {
	return func(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
		var none struct{}
		if err := httpkit.DecodeOptionalJSON(w, r, s.maxBody, &none); err != nil {
			s.fail(w, r, err)
			return
		}
		d, err := s.projectDep(r, p)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.writeDepAction(w, r, p, d, action, true)
	}
}

// writeDepAction starts action and answers with what it started. A new
// dependency no online worker matches yet is recorded all the same
// (install it once one is); an explicit action on none is a conflict.
func (s *API) writeDepAction(w http.ResponseWriter, r *http.Request, p controlplane.Project, d controlplane.Dependency, action string, needWorkers bool) {
	runs, err := s.actDep(r, p, d, action)
	if !needWorkers && errs.Code(err) == errs.Conflict && errs.Field(err) == "labels" {
		runs, err = []DependencyRun{}, nil
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err = s.deps.GetDependency(r.Context(), d.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.depView(r.Context(), d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, DependencyAction{Dependency: v, Runs: runs})
}

// actDep starts action on every matching online worker: the worker's
// system task gets the action's line, its install record is written, then
// a Run of the task starts (named by the record's run key).
func (s *API) actDep(r *http.Request, p controlplane.Project, d controlplane.Dependency, action string) ([]DependencyRun, error) {
	ctx := r.Context()
	ops, err := s.runOps()
	if err != nil {
		return nil, err
	}
	set, err := s.deps.GetDependencySettings(ctx, p.ID, d.Kind)
	if err != nil {
		return nil, err
	}
	line, err := depcmd.WorkerCommand(depcmd.Dependency{Kind: d.Kind, Name: d.Name, Version: d.Version}, action, depcmd.Settings(set))
	if err != nil {
		return nil, err
	}
	workers, err := s.deps.DependencyWorkers(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	if len(workers) == 0 {
		return nil, errs.E(errs.Conflict, "labels", "no online worker has the dependency's labels %v: there is nothing to %s on", d.Labels, action)
	}
	if _, err := s.deps.StartDependencyAction(ctx, d.ID, action); err != nil {
		return nil, err
	}
	installs, err := s.deps.ListDependencyInstalls(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	taskOf := map[string]string{}
	for _, in := range installs {
		taskOf[in.WorkerID] = in.TaskID
	}
	runs := make([]DependencyRun, 0, len(workers))
	for _, wk := range workers {
		task, err := s.depTask(ctx, p, d, wk, taskOf[wk.ID], line)
		if err != nil {
			return runs, err
		}
		id, err := controlplane.NewID()
		if err != nil {
			return runs, err
		}
		key := controlplane.DependencyRunKeyPrefix + id.String()
		if _, err := s.deps.RecordDependencyInstall(ctx, controlplane.DependencyInstallInput{DependencyID: d.ID, WorkerID: wk.ID,
			TaskID: task.ID, Action: action, RunKey: key}); err != nil {
			return runs, err
		}
		res, err := ops.RunNow(ctx, controlplane.RunNowInput{TaskID: task.ID, IdempotencyKey: key, Actor: s.actor(r)})
		if err != nil {
			if ferr := s.deps.FailDependencyInstall(ctx, d.ID, wk.ID, key); ferr != nil {
				s.log.WarnContext(ctx, "dependency install not marked failed", "dependency", d.ID, "worker", wk.ID, "err", ferr)
			}
			return runs, err
		}
		runs = append(runs, DependencyRun{WorkerID: wk.ID, WorkerName: wk.Name, RunID: res.RunID})
	}
	return runs, nil
}

// depTask brings the worker's system task of d up to date with line
// (created disabled, without triggers: only actions run it).
func (s *API) depTask(ctx context.Context, p controlplane.Project, d controlplane.Dependency, wk controlplane.DependencyWorker,
	taskID, line string) (controlplane.Task, error) {
	cmd := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: line}, TimeoutMs: depTimeoutMs,
		Concurrency: spec.ConcurrencyForbid,
		Placement:   &placement.Requirements{Required: placement.Required{Labels: map[string]string{placement.WorkerLabel: wk.ID}}}}.WithDefaults()
	if taskID != "" {
		t, err := s.b.GetTask(ctx, taskID)
		switch {
		case err == nil:
			want, err := cmd.Digest()
			if err != nil {
				return t, err
			}
			if have, err := t.Spec.Digest(); err == nil && have == want {
				return t, nil
			}
			return s.b.PublishTask(ctx, controlplane.TaskInput{TaskID: t.ID, ExpectedRevision: t.Revision, Name: t.Name, Spec: cmd})
		case errs.Code(err) != errs.NotFound:
			return t, err
		}
	}
	off := false
	name := "dependency " + d.Kind + " " + d.Name + " @ " + wk.Name
	t, err := s.b.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: name, Enabled: &off, Spec: cmd})
	if errs.Code(err) == errs.Conflict {
		t, err = s.b.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: name + " (" + d.ID + ")", Enabled: &off, Spec: cmd})
	}
	if err != nil {
		return t, err
	}
	return s.b.SetTaskLabels(ctx, t.ID, depTaskLabels)
}

func (s *API) cancelDep(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	ops, err := s.runOps()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.projectDep(r, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.depView(r.Context(), d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := DependencyAction{Dependency: v, Runs: []DependencyRun{}}
	for _, in := range v.Installs {
		if in.FinishedAtMs != 0 || in.RunID == "" {
			continue
		}
		oc, err := ops.CancelRun(r.Context(), in.RunID, s.actor(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Runs = append(out.Runs, DependencyRun{WorkerID: in.WorkerID, WorkerName: in.WorkerName, RunID: in.RunID, Cancel: string(oc)})
	}
	if len(out.Runs) == 0 {
		s.fail(w, r, errs.Conflictf("%s %s has no action running to cancel", d.Kind, d.Name))
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *API) deleteDep(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	d, err := s.projectDep(r, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tasks, err := s.deps.DeleteDependency(r.Context(), d.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, id := range tasks {
		if _, err := s.b.DeleteTask(r.Context(), controlplane.DeleteInput{TaskID: id}); err != nil && errs.Code(err) != errs.NotFound {
			s.fail(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *API) getDepSettings(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	set, err := s.deps.GetDependencySettings(r.Context(), p.ID, r.PathValue("kind"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, set)
}

func (s *API) putDepSettings(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	var req controlplane.DependencySettings
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Kind == "" {
		req.Kind = r.PathValue("kind")
	}
	if req.Kind != r.PathValue("kind") {
		s.fail(w, r, errs.Invalidf("kind", "must be the path's kind %.16q", r.PathValue("kind")))
		return
	}
	set, err := s.deps.SetDependencySettings(r.Context(), p.ID, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, set)
}
