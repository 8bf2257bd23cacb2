package subrun

import (
	"context"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/find"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subplan"
)

// maxTaskName is the publication room's limit of a task name.
const maxTaskName = 128

// apply makes the plan's mutating changes through the publication room,
// each as the actor "subscription:<id>" (so every audit line names the
// subscription as its origin), and records what it applied. A task that
// moved between plan and apply (a person edited it) is answered diverged.
func (p *Puller) apply(ctx context.Context, sub controlplane.Subscription, changes []subplan.Change, log io.Writer) ([]subplan.Change, error) {
	ctx = controlplane.WithActor(ctx, controlplane.Actor{Kind: "system", ID: controlplane.SubscriptionOrigin(sub.ID)})
	current, err := p.Subs.SubscriptionPlanTasks(ctx, sub.ID)
	if err != nil {
		return nil, err
	}
	byID := map[string]subplan.Task{}
	for _, t := range current {
		byID[t.ID] = t
	}
	out := make([]subplan.Change, 0, len(changes))
	for _, c := range changes {
		if !c.Mutates() {
			out = append(out, c)
			continue
		}
		if c.Action != subplan.Add {
			if t, ok := byID[c.TaskID]; !ok || t.Diverged() {
				c = subplan.Change{Action: subplan.Diverged, Path: c.Path, TaskID: c.TaskID, Reason: "edited by hand while the pull ran: not overwritten"}
				fmt.Fprintf(log, "%s %s: %s\n", c.Action, c.Path, c.Reason)
				out = append(out, c)
				continue
			}
		}
		done, err := p.applyOne(ctx, sub, byID[c.TaskID], c)
		if errs.Code(err) == errs.Conflict && c.Action != subplan.Add {
			done = subplan.Change{Action: subplan.Diverged, Path: c.Path, TaskID: c.TaskID, Reason: "changed while the pull ran: not overwritten"}
			err = nil
		}
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", c.Action, c.Path, err)
		}
		fmt.Fprintf(log, "%s %s: task %s %s %s\n", done.Action, done.Path, done.TaskID, done.Name, done.Cron)
		out = append(out, done)
	}
	return out, nil
}

func (p *Puller) applyOne(ctx context.Context, sub controlplane.Subscription, t subplan.Task, c subplan.Change) (subplan.Change, error) {
	switch c.Action {
	case subplan.Add:
		task, given, err := p.create(ctx, sub, c)
		if err != nil {
			return c, err
		}
		c.TaskID = task.ID
		return c, p.Subs.RecordSubscriptionTask(ctx, controlplane.SubscriptionTask{SubscriptionID: sub.ID, TaskID: task.ID,
			Path: c.Path, AppliedName: c.Name, GivenName: given, AppliedCron: c.Cron, AppliedRevision: task.Revision, AppliedDigest: task.Digest})
	case subplan.Update:
		task, err := p.Tasks.GetTask(ctx, c.TaskID)
		if err != nil {
			return c, err
		}
		given := task.Name
		if c.Name != t.AppliedName {
			if task, given, err = p.rename(ctx, sub, c, task); err != nil {
				return c, err
			}
		}
		if c.Cron != t.AppliedCron {
			trs, err := p.Tasks.ListTriggers(ctx, task.ID, controlplane.ListRequest{Limit: 2})
			if err != nil {
				return c, err
			}
			if len(trs.Items) != 1 {
				return c, errs.Conflictf("task %s has %d triggers", task.ID, len(trs.Items))
			}
			tr := trs.Items[0]
			if _, err := p.Tasks.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, TriggerID: tr.ID,
				ExpectedRevision: tr.Revision, Expression: c.Cron, TimeZone: sub.TimeZone}); err != nil {
				return c, err
			}
		}
		return c, p.Subs.RecordSubscriptionTask(ctx, controlplane.SubscriptionTask{SubscriptionID: sub.ID, TaskID: task.ID,
			Path: c.Path, AppliedName: c.Name, GivenName: given, AppliedCron: c.Cron, AppliedRevision: task.Revision, AppliedDigest: task.Digest})
	case subplan.Disable:
		_, err := p.Tasks.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: c.TaskID, Enabled: false})
		return c, err
	case subplan.Remove:
		if _, err := p.Tasks.DeleteTask(ctx, controlplane.DeleteInput{TaskID: c.TaskID}); err != nil && errs.Code(err) != errs.NotFound {
			return c, err
		}
		return c, p.Subs.ForgetSubscriptionTask(ctx, sub.ID, c.TaskID)
	}
	return c, errs.Invalidf("action", "unknown action %q", c.Action)
}

// create publishes the task of a script: the script by its path in the
// scripts folder, its cron as the one trigger, the label sub:<slug>.
func (p *Puller) create(ctx context.Context, sub controlplane.Subscription, c subplan.Change) (controlplane.Task, string, error) {
	cmd := spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: sub.Slug + "/" + c.Path}}.WithDefaults()
	var last error
	for _, name := range candidates(c.Name, sub.Slug+"/"+c.Path) {
		task, err := p.Tasks.PublishTask(ctx, controlplane.TaskInput{ProjectID: sub.ProjectID, Name: name, Spec: cmd,
			Triggers: []controlplane.TriggerInput{{Expression: c.Cron, TimeZone: sub.TimeZone}}})
		if errs.Code(err) == errs.Conflict && errs.Field(err) == "name" {
			last = err
			continue
		}
		if err != nil {
			return task, "", err
		}
		if l := "sub:" + sub.Slug; utf8.RuneCountInString(l) <= find.MaxLabelChars {
			if task, err = p.Tasks.SetTaskLabels(ctx, task.ID, []string{l}); err != nil {
				return task, "", err
			}
		}
		return task, name, nil
	}
	return controlplane.Task{}, "", errs.Prefix("no free task name", last)
}

// rename gives a task the script's new declared name, or the first of
// its candidates the project does not use yet (the publication room
// refuses a taken name).
func (p *Puller) rename(ctx context.Context, sub controlplane.Subscription, c subplan.Change, task controlplane.Task) (controlplane.Task, string, error) {
	var last error
	for _, name := range candidates(c.Name, sub.Slug+"/"+c.Path) {
		if name == task.Name {
			return task, name, nil
		}
		up, err := p.Tasks.PublishTask(ctx, controlplane.TaskInput{TaskID: task.ID, ExpectedRevision: task.Revision, Name: name, Spec: task.Spec})
		if errs.Code(err) == errs.Conflict && errs.Field(err) == "name" {
			last = err
			continue
		}
		return up, name, err
	}
	return task, "", errs.Prefix("no free task name", last)
}

// candidates are the names tried for a script's task: its declared name,
// then with the script's path, then numbered ("京豆 (repo/jd_bean.js #2)").
func candidates(name, path string) []string {
	if name == "" {
		name = path
	}
	out := []string{name, name + " (" + path + ")"}
	for i := 2; i <= 9; i++ {
		out = append(out, fmt.Sprintf("%s (%s #%d)", name, path, i))
	}
	for i, n := range out {
		if utf8.RuneCountInString(n) > maxTaskName {
			out[i] = string([]rune(n)[:maxTaskName])
		}
	}
	return out
}
