package subs

import (
	"context"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/subfetch"
)

// Store is what the service needs of the edge store.
type Store interface {
	edge.SubscriptionStore
	edge.TaskStore
	GetRun(ctx context.Context, runID string) (edge.Run, error)
	CreateManualRun(ctx context.Context, in edge.ManualRun) (edge.Run, bool, error)
}

// CredentialFunc reads the value of the env store entry name.
type CredentialFunc func(ctx context.Context, name string) (string, error)

// Config wires a Service.
type Config struct {
	Store       Store
	ScriptsRoot string // the scripts folder
	WorkDir     string // <dataDir>/subs: caches and stages
	Exe         string // the ql3-edge program the system tasks run
	Git         string // "" = git on the PATH
	Limits      Limits
	Credential  CredentialFunc // nil: previews of subscriptions with a credential are refused
}

// Service runs subscriptions on the edge: their system tasks, previews
// and the application of a pull's plan.
type Service struct{ cfg Config }

// New returns a Service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// Config returns the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// PullRunArgs are the arguments of the system task's program.
func PullRunArgs(subID string) []string { return []string{"sub", "pull-run", subID} }

// SystemLabels mark the system tasks of subscriptions.
var SystemLabels = []string{"system", "subscription"}

// systemTask is the system task a subscription's pulls are Runs of.
func (s *Service) systemTask(sub edge.Subscription) (string, spec.Command, []edge.TriggerInput) {
	c := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: s.cfg.Exe, Args: PullRunArgs(sub.ID)},
		TimeoutMs: 30 * 60 * 1000, Concurrency: spec.ConcurrencyForbid}
	if sub.Credential != "" {
		c.Env = &spec.EnvScope{Use: []string{sub.Credential}}
	}
	c = c.WithDefaults()
	var triggers []edge.TriggerInput
	if sub.Schedule != "" {
		triggers = append(triggers, edge.TriggerInput{Expression: sub.Schedule, TimeZone: sub.TimeZone, Enabled: true})
	}
	return "subscription " + sub.Slug, c, triggers
}

// EnsureTask publishes (or brings up to date) the system task of a
// subscription: its program, credential scope, schedule and switch.
func (s *Service) EnsureTask(ctx context.Context, sub edge.Subscription) (edge.Task, error) {
	name, c, triggers := s.systemTask(sub)
	if sub.TaskID != "" {
		t, err := s.cfg.Store.GetTask(ctx, sub.TaskID)
		if err == nil && !t.Deleted() {
			return s.syncTask(ctx, sub, t, name, c, triggers)
		}
		if err != nil && errs.Code(err) != errs.NotFound {
			return edge.Task{}, err
		}
	}
	t, err := s.cfg.Store.CreateTask(ctx, edge.NewTask{Name: name, Spec: c, Enabled: sub.Enabled,
		Labels: SystemLabels, Triggers: triggers})
	if errs.Code(err) == errs.Conflict {
		t, err = s.cfg.Store.CreateTask(ctx, edge.NewTask{Name: name + " (" + sub.ID + ")", Spec: c, Enabled: sub.Enabled,
			Labels: SystemLabels, Triggers: triggers})
	}
	if err != nil {
		return edge.Task{}, err
	}
	return t, s.cfg.Store.SetSubscriptionTask(ctx, sub.ID, t.ID)
}

func (s *Service) syncTask(ctx context.Context, sub edge.Subscription, t edge.Task, name string, c spec.Command, triggers []edge.TriggerInput) (edge.Task, error) {
	cs, err := edge.CompileSpec(c)
	if err != nil {
		return t, err
	}
	if cs.Digest != t.Digest {
		if t, err = s.cfg.Store.UpdateTask(ctx, t.ID, t.Revision, edge.TaskUpdate{Name: t.Name, Spec: c}); err != nil {
			return t, err
		}
	}
	cur, err := s.cfg.Store.ListTriggers(ctx, t.ID)
	if err != nil {
		return t, err
	}
	same := len(cur) == len(triggers)
	for i := 0; same && i < len(cur); i++ {
		want, err := edge.NormalizeTrigger(triggers[i])
		if err != nil {
			return t, err
		}
		same = edge.ScheduleKey(want) == edge.ScheduleKey(edge.TriggerInput{Expression: cur[i].Expression, TimeZone: cur[i].TimeZone}) && cur[i].Enabled
	}
	if !same {
		for _, tr := range cur {
			if err := s.cfg.Store.DeleteTrigger(ctx, tr.ID); err != nil {
				return t, err
			}
		}
		for _, in := range triggers {
			if _, err := s.cfg.Store.CreateTrigger(ctx, t.ID, in); err != nil {
				return t, err
			}
		}
	}
	if t.Enabled != sub.Enabled {
		return s.cfg.Store.SetTaskEnabled(ctx, t.ID, sub.Enabled)
	}
	return t, nil
}

// EnsureAll publishes the system task of every subscription (at start:
// the program's path may have changed, an import may have added some).
func (s *Service) EnsureAll(ctx context.Context) error {
	subs, err := s.cfg.Store.ListSubscriptions(ctx)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if _, err := s.EnsureTask(ctx, sub); err != nil {
			return errs.Prefix("subscription "+sub.Name, err)
		}
	}
	return nil
}

// Create stores a subscription and publishes its system task.
func (s *Service) Create(ctx context.Context, in edge.NewSubscription, actor string) (edge.Subscription, error) {
	sub, err := s.cfg.Store.CreateSubscription(ctx, in, actor)
	if err != nil {
		return sub, err
	}
	if _, err := s.EnsureTask(ctx, sub); err != nil {
		return sub, err
	}
	return s.cfg.Store.GetSubscription(ctx, sub.ID)
}

// Update replaces a subscription and brings its system task up to date.
func (s *Service) Update(ctx context.Context, id string, in edge.NewSubscription, actor string) (edge.Subscription, error) {
	sub, err := s.cfg.Store.UpdateSubscription(ctx, id, in, actor)
	if err != nil {
		return sub, err
	}
	if _, err := s.EnsureTask(ctx, sub); err != nil {
		return sub, err
	}
	return s.cfg.Store.GetSubscription(ctx, sub.ID)
}

// Delete removes a subscription and its system task (its Runs stay in
// the history); the tasks it made and its folder stay.
func (s *Service) Delete(ctx context.Context, id, actor string) error {
	sub, err := s.cfg.Store.GetSubscription(ctx, id)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteSubscription(ctx, id, actor); err != nil {
		return err
	}
	if sub.TaskID != "" {
		if err := s.cfg.Store.DeleteTask(ctx, sub.TaskID); err != nil && errs.Code(err) != errs.NotFound {
			return err
		}
	}
	// Its git cache, stages and previous tree go; scripts/<slug>/ stays.
	return os.RemoveAll(filepath.Join(s.cfg.WorkDir, sub.Slug))
}

// Pull starts a pull now: a manual Run of the system task.
func (s *Service) Pull(ctx context.Context, id, idempotencyKey string) (edge.Run, error) {
	sub, err := s.cfg.Store.GetSubscription(ctx, id)
	if err != nil {
		return edge.Run{}, err
	}
	if sub.TaskID == "" {
		t, err := s.EnsureTask(ctx, sub)
		if err != nil {
			return edge.Run{}, err
		}
		sub.TaskID = t.ID
	}
	r, _, err := s.cfg.Store.CreateManualRun(ctx, edge.ManualRun{TaskID: sub.TaskID, IdempotencyKey: idempotencyKey})
	return r, err
}

// Preview is what a pull would do now, computed over a freshly staged
// tree that is then discarded: nothing is written to the scripts folder
// or the tasks.
type Preview struct {
	Commit  string
	Skipped []Skip
	Changes []subplan.Change
}

// Preview fetches the subscription into a stage of its own, plans, and
// discards the stage.
func (s *Service) Preview(ctx context.Context, id string) (Preview, error) {
	sub, err := s.cfg.Store.GetSubscription(ctx, id)
	if err != nil {
		return Preview{}, err
	}
	src := SourceOf(sub)
	if sub.Credential != "" {
		if s.cfg.Credential == nil {
			return Preview{}, errs.E(errs.Unavailable, "credential", "this server cannot read the env store")
		}
		if src.Credential, err = s.cfg.Credential(ctx, sub.Credential); err != nil {
			return Preview{}, errs.Prefix("credential", err)
		}
	}
	stager := &Stager{WorkDir: s.cfg.WorkDir, Git: s.cfg.Git, Limits: s.cfg.Limits}
	st, err := stager.Stage(ctx, sub.Slug, "preview", src)
	if err != nil {
		return Preview{}, errs.E(errs.Invalid, "url", "the pull fails: %v", err)
	}
	defer st.Discard()
	changes, err := s.plan(ctx, sub, st.Dir)
	return Preview{Commit: st.Commit, Skipped: st.Skipped, Changes: changes}, err
}

func (s *Service) plan(ctx context.Context, sub edge.Subscription, dir string) ([]subplan.Change, error) {
	scripts, err := subfetch.Scan(dir, sub.Filter)
	if err != nil {
		return nil, err
	}
	tasks, err := s.cfg.Store.SubscriptionPlanTasks(ctx, sub.ID)
	if err != nil {
		return nil, err
	}
	return subplan.Plan(scripts, tasks, subplan.Options{AutoAdd: sub.AutoAdd, AutoRemove: sub.AutoRemove,
		RemoveMode: sub.RemoveMode, DefaultCron: sub.DefaultCron})
}

// SourceOf is what a pull of sub fetches (the credential's value is the
// caller's to add).
func SourceOf(sub edge.Subscription) Source {
	return Source{Kind: sub.Kind, URL: sub.URL, Branch: sub.Branch, Proxy: sub.Proxy, CredentialKind: sub.CredentialKind}
}

// ForRun finds the subscription whose system task the Run runs; the Run
// must be active (a pull in progress).
func (s *Service) ForRun(ctx context.Context, runID string) (edge.Subscription, error) {
	r, err := s.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return edge.Subscription{}, err
	}
	if r.Status != run.RunRunning && r.Status != run.RunDispatching {
		return edge.Subscription{}, errs.E(errs.Forbidden, "run", "run %s is not running", runID)
	}
	subs, err := s.cfg.Store.ListSubscriptions(ctx)
	if err != nil {
		return edge.Subscription{}, err
	}
	for _, sub := range subs {
		if sub.TaskID != "" && sub.TaskID == r.TaskID {
			return sub, nil
		}
	}
	return edge.Subscription{}, errs.E(errs.Forbidden, "run", "run %s is not a subscription's pull", runID)
}

// Apply plans over the tree now in the subscription's folder (the pull
// just swapped it in) and applies the plan; actor names the Run.
func (s *Service) Apply(ctx context.Context, sub edge.Subscription, commit string, pulledAtMs int64, actor string) ([]subplan.Change, error) {
	changes, err := s.plan(ctx, sub, filepath.Join(s.cfg.ScriptsRoot, sub.Slug))
	if err != nil {
		return nil, err
	}
	return s.cfg.Store.ApplySubscriptionPlan(ctx, edge.SubscriptionApply{SubscriptionID: sub.ID, Changes: changes,
		Commit: commit, PulledAtMs: pulledAtMs, Actor: actor})
}
