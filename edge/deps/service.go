package deps

import (
	"context"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
)

// Store is what the service needs of the edge store.
type Store interface {
	edge.SubscriptionStore
	edge.TaskStore
	GetRun(ctx context.Context, runID string) (edge.Run, error)
	CreateManualRun(ctx context.Context, in edge.ManualRun) (edge.Run, bool, error)
	RequestCancel(ctx context.Context, runID string) (edge.Run, error)
}

// Config wires a Service.
type Config struct {
	Store  Store
	Places Places
	// LookPath finds the linux package manager (nil: exec.LookPath).
	LookPath func(string) (string, error)
}

// Service runs dependency actions as Runs.
type Service struct{ cfg Config }

// New returns a Service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// SystemLabels mark the system tasks of dependencies.
var SystemLabels = []string{"system", "dependency"}

// States of a dependency, read from its last Run.
const (
	StateNew        = "new"        // no action yet
	StateInstalling = "installing" // an install or reinstall Run is queued or running
	StateInstalled  = "installed"
	StateFailed     = "failed" // the last install failed (its Run's log says why)
	StateRemoving   = "removing"
	StateRemoved    = "removed"
	StateCancelled  = "cancelled"
)

// State is what a dependency's last Run says about it.
func State(d edge.Dependency, last *edge.Run) string {
	if d.LastAction == "" || last == nil {
		return StateNew
	}
	remove := d.LastAction == edge.DepRemove
	switch {
	case !last.Status.Terminal():
		if remove {
			return StateRemoving
		}
		return StateInstalling
	case last.Status == run.RunSucceeded && remove:
		return StateRemoved
	case last.Status == run.RunSucceeded:
		return StateInstalled
	case last.Status == run.RunCancelled:
		return StateCancelled
	}
	return StateFailed
}

// Create records a dependency and starts its install.
func (s *Service) Create(ctx context.Context, in edge.NewDependency, actor string) (edge.Dependency, edge.Run, error) {
	d, err := s.cfg.Store.CreateDependency(ctx, in, actor)
	if err != nil {
		return d, edge.Run{}, err
	}
	return s.Act(ctx, d.ID, edge.DepInstall, actor)
}

// Act starts an install, reinstall or removal: the dependency's system
// task gets the action's command line as a new revision, and a Run of it.
func (s *Service) Act(ctx context.Context, id, action, actor string) (edge.Dependency, edge.Run, error) {
	st := s.cfg.Store
	d, err := st.GetDependency(ctx, id)
	if err != nil {
		return d, edge.Run{}, err
	}
	set, err := st.GetDependencySettings(ctx, d.Kind)
	if err != nil {
		return d, edge.Run{}, err
	}
	var pm *PackageManager
	if d.Kind == edge.DependencyLinux {
		if m, ok := FindPackageManager(s.cfg.LookPath); ok {
			pm = &m
		}
	}
	line, err := Command(d, action, set, s.cfg.Places, pm)
	if err != nil {
		return d, edge.Run{}, err
	}
	c := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: line},
		TimeoutMs: 30 * 60 * 1000, Concurrency: spec.ConcurrencyForbid}.WithDefaults()
	task, err := s.ensureTask(ctx, d, c)
	if err != nil {
		return d, edge.Run{}, err
	}
	if d.LastRunID != "" {
		if last, err := st.GetRun(ctx, d.LastRunID); err == nil && !last.Status.Terminal() {
			return d, last, errs.Conflictf("%s %s: run %s is still %s; cancel it first", d.Kind, d.Name, last.ID, last.Status)
		}
	}
	r, _, err := st.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID})
	if err != nil {
		return d, r, err
	}
	d, err = st.RecordDependencyAction(ctx, d.ID, task.ID, action, r.ID, actor)
	return d, r, err
}

func (s *Service) ensureTask(ctx context.Context, d edge.Dependency, c spec.Command) (edge.Task, error) {
	st := s.cfg.Store
	if d.TaskID != "" {
		t, err := st.GetTask(ctx, d.TaskID)
		if err == nil && !t.Deleted() {
			cs, err := edge.CompileSpec(c)
			if err != nil || cs.Digest == t.Digest {
				return t, err
			}
			return st.UpdateTask(ctx, t.ID, t.Revision, edge.TaskUpdate{Name: t.Name, Spec: c})
		}
		if err != nil && errs.Code(err) != errs.NotFound {
			return t, err
		}
	}
	name := "dependency " + d.Kind + " " + d.Name
	t, err := st.CreateTask(ctx, edge.NewTask{Name: name, Spec: c, Enabled: true, Labels: SystemLabels})
	if errs.Code(err) == errs.Conflict {
		t, err = st.CreateTask(ctx, edge.NewTask{Name: name + " (" + d.ID + ")", Spec: c, Enabled: true, Labels: SystemLabels})
	}
	return t, err
}

// Cancel cancels the dependency's running action.
func (s *Service) Cancel(ctx context.Context, id string) (edge.Run, error) {
	d, err := s.cfg.Store.GetDependency(ctx, id)
	if err != nil {
		return edge.Run{}, err
	}
	if d.LastRunID == "" {
		return edge.Run{}, errs.Conflictf("%s %s has no action to cancel", d.Kind, d.Name)
	}
	return s.cfg.Store.RequestCancel(ctx, d.LastRunID)
}

// Delete forgets a dependency (it stays installed; remove uninstalls) and
// its system task (the Runs stay in the history).
func (s *Service) Delete(ctx context.Context, id, actor string) error {
	d, err := s.cfg.Store.GetDependency(ctx, id)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteDependency(ctx, id, actor); err != nil {
		return err
	}
	if d.TaskID != "" {
		if err := s.cfg.Store.DeleteTask(ctx, d.TaskID); err != nil && errs.Code(err) != errs.NotFound {
			return err
		}
	}
	return nil
}

// Last returns the dependency's last Run (nil before any action).
func (s *Service) Last(ctx context.Context, d edge.Dependency) (*edge.Run, error) {
	if d.LastRunID == "" {
		return nil, nil
	}
	r, err := s.cfg.Store.GetRun(ctx, d.LastRunID)
	if errs.Code(err) == errs.NotFound {
		return nil, nil // pruned by retention
	}
	return &r, err
}
