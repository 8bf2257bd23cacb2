package subrun

import (
	"context"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subdef"
)

// SystemLabels mark the system tasks of subscriptions.
var SystemLabels = []string{"system", "subscription"}

// PullArgs are the arguments of the system task's program as shown: the
// Run is executed by the Executor in the control plane (the reserved
// executor in its placement), never by a worker process.
func PullArgs(subID string) []string { return []string{"sub", "pull-run", subID} }

// RunPorts starts and cancels Runs (runtime role).
type RunPorts interface {
	RunNow(ctx context.Context, in controlplane.RunNowInput) (controlplane.RunNowResult, error)
}

// TaskAdmin is what keeping a system task needs beyond TaskPorts.
type TaskAdmin interface {
	TaskPorts
	DeleteTrigger(ctx context.Context, in controlplane.DeleteInput) (controlplane.Trigger, error)
}

// Service keeps a project's subscriptions and their system tasks, and
// starts pulls as Runs.
type Service struct {
	Subs   controlplane.SubscriptionStore
	Tasks  TaskAdmin
	Runs   RunPorts
	Puller *Puller // previews; nil: previews are refused
}

// systemSpec is the system task's spec: the reserved executor placed,
// one pull at a time, 30 minutes at most, no retry.
func systemSpec(sub controlplane.Subscription) spec.Command {
	c := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "ql3-control", Args: PullArgs(sub.ID)},
		TimeoutMs: 30 * 60 * 1000, Concurrency: spec.ConcurrencyForbid,
		Retry:     spec.RetryPolicy{MaxAttempts: 1},
		Placement: &placement.Requirements{Required: placement.Required{Executors: []string{placement.SubscriptionExecutor}}}}
	return c.WithDefaults()
}

func systemName(sub controlplane.Subscription) string { return "subscription " + sub.Slug }

// EnsureTask publishes (or brings up to date) the subscription's system
// task: its spec, its cron trigger (the schedule) and its switch.
func (s *Service) EnsureTask(ctx context.Context, sub controlplane.Subscription) (controlplane.Task, error) {
	c := systemSpec(sub)
	var triggers []controlplane.TriggerInput
	if sub.Schedule != "" {
		triggers = append(triggers, controlplane.TriggerInput{Expression: sub.Schedule, TimeZone: sub.TimeZone})
	}
	enabled := sub.Enabled
	if sub.TaskID == "" {
		var t controlplane.Task
		var err error
		for _, name := range []string{systemName(sub), systemName(sub) + " (" + sub.ID + ")"} {
			t, err = s.Tasks.PublishTask(ctx, controlplane.TaskInput{ProjectID: sub.ProjectID, Name: name, Spec: c,
				Enabled: &enabled, Triggers: triggers})
			if errs.Code(err) != errs.Conflict {
				break
			}
		}
		if err != nil {
			return t, err
		}
		if t, err = s.Tasks.SetTaskLabels(ctx, t.ID, SystemLabels); err != nil {
			return t, err
		}
		return t, s.Subs.SetSubscriptionTask(ctx, sub.ID, t.ID)
	}
	t, err := s.Tasks.GetTask(ctx, sub.TaskID)
	if err != nil {
		return t, err
	}
	if t, err = s.Tasks.PublishTask(ctx, controlplane.TaskInput{TaskID: t.ID, ExpectedRevision: t.Revision, Name: t.Name,
		Spec: c, Enabled: &enabled}); err != nil {
		return t, err
	}
	cur, err := s.Tasks.ListTriggers(ctx, t.ID, controlplane.ListRequest{Limit: controlplane.MaxListLimit})
	if err != nil {
		return t, err
	}
	same := len(cur.Items) == len(triggers)
	for i := 0; same && i < len(cur.Items); i++ {
		tz := triggers[i].TimeZone
		if tz == "" {
			tz = "UTC"
		}
		same = cur.Items[i].Expression == triggers[i].Expression && cur.Items[i].TimeZone == tz && cur.Items[i].Enabled
	}
	if !same {
		for _, tr := range cur.Items {
			if _, err := s.Tasks.DeleteTrigger(ctx, controlplane.DeleteInput{TriggerID: tr.ID}); err != nil {
				return t, err
			}
		}
		for _, in := range triggers {
			in.TaskID = t.ID
			if _, err := s.Tasks.PublishTrigger(ctx, in); err != nil {
				return t, err
			}
		}
	}
	return t, nil
}

// PublishSystemTask publishes the system task of a subscription that has
// none yet (one the QingLong import created in its transaction); one that
// has its task is left as it is.
func (s *Service) PublishSystemTask(ctx context.Context, id string) error {
	sub, err := s.Subs.GetSubscription(ctx, id)
	if err != nil || sub.TaskID != "" {
		return err
	}
	_, err = s.EnsureTask(ctx, sub)
	return err
}

// Create stores a subscription of the project and publishes its system task.
func (s *Service) Create(ctx context.Context, projectID string, in subdef.Def) (controlplane.Subscription, error) {
	sub, err := s.Subs.CreateSubscription(ctx, projectID, in)
	if err != nil {
		return sub, err
	}
	if _, err := s.EnsureTask(ctx, sub); err != nil {
		return sub, err
	}
	return s.Subs.GetSubscription(ctx, sub.ID)
}

// Update replaces a subscription and brings its system task up to date.
func (s *Service) Update(ctx context.Context, id string, expectedVersion int64, in subdef.Def) (controlplane.Subscription, error) {
	sub, err := s.Subs.UpdateSubscription(ctx, id, expectedVersion, in)
	if err != nil {
		return sub, err
	}
	if _, err := s.EnsureTask(ctx, sub); err != nil {
		return sub, err
	}
	return s.Subs.GetSubscription(ctx, sub.ID)
}

// Delete removes a subscription and its system task (its Runs stay in the
// history); the tasks it made and its folder stay.
func (s *Service) Delete(ctx context.Context, id string) (controlplane.Subscription, error) {
	sub, err := s.Subs.DeleteSubscription(ctx, id)
	if err != nil {
		return sub, err
	}
	if sub.TaskID != "" {
		if _, err := s.Tasks.DeleteTask(ctx, controlplane.DeleteInput{TaskID: sub.TaskID}); err != nil && errs.Code(err) != errs.NotFound {
			return sub, err
		}
	}
	if s.Puller != nil {
		_ = s.Puller.Forget(sub.ID) // this replica's cache; others' go with their next start
	}
	return sub, nil
}

// Pull starts a pull now: a manual Run of the system task.
func (s *Service) Pull(ctx context.Context, id, idempotencyKey, actor string) (controlplane.RunNowResult, error) {
	sub, err := s.Subs.GetSubscription(ctx, id)
	if err != nil {
		return controlplane.RunNowResult{}, err
	}
	if sub.TaskID == "" {
		t, err := s.EnsureTask(ctx, sub)
		if err != nil {
			return controlplane.RunNowResult{}, err
		}
		sub.TaskID = t.ID
	}
	return s.Runs.RunNow(ctx, controlplane.RunNowInput{TaskID: sub.TaskID, IdempotencyKey: idempotencyKey, Actor: actor})
}

// Preview answers what a pull would do now, writing nothing.
func (s *Service) Preview(ctx context.Context, id string) (Preview, error) {
	if s.Puller == nil {
		return Preview{}, errs.E(errs.Unavailable, "", "this replica does not pull subscriptions (no work folder)")
	}
	return s.Puller.Preview(ctx, id)
}

var _ controlplane.Subscriptions = (*Service)(nil)

// ListSubscriptions lists a project's subscriptions.
func (s *Service) ListSubscriptions(ctx context.Context, projectID string) ([]controlplane.Subscription, error) {
	return s.Subs.ListSubscriptions(ctx, projectID)
}

// GetSubscription reads one subscription.
func (s *Service) GetSubscription(ctx context.Context, id string) (controlplane.Subscription, error) {
	return s.Subs.GetSubscription(ctx, id)
}

// CreateSubscription is Create.
func (s *Service) CreateSubscription(ctx context.Context, projectID string, in subdef.Def) (controlplane.Subscription, error) {
	return s.Create(ctx, projectID, in)
}

// UpdateSubscription is Update.
func (s *Service) UpdateSubscription(ctx context.Context, id string, expectedVersion int64, in subdef.Def) (controlplane.Subscription, error) {
	return s.Update(ctx, id, expectedVersion, in)
}

// DeleteSubscription is Delete.
func (s *Service) DeleteSubscription(ctx context.Context, id string) (controlplane.Subscription, error) {
	return s.Delete(ctx, id)
}

// PullSubscription is Pull.
func (s *Service) PullSubscription(ctx context.Context, id, idempotencyKey, actor string) (controlplane.RunNowResult, error) {
	return s.Pull(ctx, id, idempotencyKey, actor)
}

// PreviewSubscription is Preview.
func (s *Service) PreviewSubscription(ctx context.Context, id string) (controlplane.SubscriptionPreview, error) {
	return s.Preview(ctx, id)
}
