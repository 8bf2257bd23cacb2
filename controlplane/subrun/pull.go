// Package subrun pulls the cluster's subscriptions (issue 24, ADR 0061):
// the subfetch engine stages the repository on this replica's disk (the
// system git, every tree entry checked before a byte is written), the
// staged tree is published into the project's script store under <slug>/
// as one new version of the folder, and the plan core/subplan computes
// over it is applied through the publication room. A failed pull
// publishes nothing; Runs in flight keep the tree they are pinned to.
//
// The pull runs as the Run of the subscription's system task: Executor
// (executor.go) is the control plane's own in-process worker, claiming
// only Runs of the reserved subscription executor through the ordinary
// session and lease ports, so leases, sweeps, logs and cancel apply as to
// any Run. It links the root package, core and subfetch only.
package subrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/subfetch"
)

// TaskPorts is what applying a plan needs of the publication room.
type TaskPorts interface {
	PublishTask(ctx context.Context, in controlplane.TaskInput) (controlplane.Task, error)
	SetTaskEnabled(ctx context.Context, in controlplane.TaskEnabledInput) (controlplane.Task, error)
	GetTask(ctx context.Context, id string) (controlplane.Task, error)
	PublishTrigger(ctx context.Context, in controlplane.TriggerInput) (controlplane.Trigger, error)
	DeleteTask(ctx context.Context, in controlplane.DeleteInput) (controlplane.Task, error)
	ListTriggers(ctx context.Context, taskID string, page controlplane.ListRequest) (controlplane.ListPage[controlplane.Trigger], error)
	SetTaskLabels(ctx context.Context, taskID string, labels []string) (controlplane.Task, error)
}

// CredentialFunc reads the value of the project's env store entry name.
type CredentialFunc func(ctx context.Context, projectID, name string) (string, error)

// Puller pulls subscriptions on this replica.
type Puller struct {
	Subs       controlplane.SubscriptionStore
	Trees      controlplane.ScriptDirPublisher
	Tasks      TaskPorts
	Credential CredentialFunc // nil: subscriptions with a credential are refused
	WorkDir    string         // this replica's private caches and stages
	Git        string         // "" = git on the PATH
	Limits     subfetch.Limits
}

// Result is what a pull did.
type Result struct {
	Commit    string                       `json:"commit"`
	Skipped   []subfetch.Skip              `json:"skipped"`
	Published controlplane.ScriptDirResult `json:"published"`
	Changes   []subplan.Change             `json:"changes"`
}

// stage fetches sub into a fresh stage of prefix under the subscription's
// own work folder (keyed by its id: slugs repeat across projects).
func (p *Puller) stage(ctx context.Context, sub controlplane.Subscription, prefix string, log io.Writer) (subfetch.Staged, error) {
	src := subfetch.Source{Kind: sub.Kind, URL: sub.URL, Branch: sub.Branch, Proxy: sub.Proxy, CredentialKind: sub.CredentialKind}
	if sub.Credential != "" {
		if p.Credential == nil {
			return subfetch.Staged{}, errs.E(errs.Unavailable, "credential", "this replica cannot read the env store")
		}
		v, err := p.Credential(ctx, sub.ProjectID, sub.Credential)
		if err != nil {
			return subfetch.Staged{}, errs.Prefix("credential", err)
		}
		src.Credential = v
	}
	subfetch.RemoveStale(p.WorkDir, sub.ID, prefix)
	st := &subfetch.Stager{WorkDir: p.WorkDir, Git: p.Git, Limits: p.Limits, Log: log}
	return st.Stage(ctx, sub.ID, prefix, src)
}

func (p *Puller) plan(ctx context.Context, sub controlplane.Subscription, dir string) ([]subplan.Change, error) {
	scripts, err := subfetch.Scan(dir, sub.Filter)
	if err != nil {
		return nil, err
	}
	tasks, err := p.Subs.SubscriptionPlanTasks(ctx, sub.ID)
	if err != nil {
		return nil, err
	}
	return subplan.Plan(scripts, tasks, subplan.Options{AutoAdd: sub.AutoAdd, AutoRemove: sub.AutoRemove,
		RemoveMode: sub.RemoveMode, DefaultCron: sub.DefaultCron})
}

// Pull fetches, checks and publishes the subscription's tree, then plans
// and applies. Everything it does is written to log (the Run's log).
// Before the publication nothing is written; a cancelled or failed pull
// leaves the folder's previous version in place.
func (p *Puller) Pull(ctx context.Context, subID string, log io.Writer) (Result, error) {
	sub, err := p.Subs.GetSubscription(ctx, subID)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(log, "subscription %s (%s): pulling %s into %s/\n", sub.Name, sub.ID, sub.URL, sub.Slug)
	st, err := p.stage(ctx, sub, "stage", log)
	if err != nil {
		return Result{}, err
	}
	defer st.Discard()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	maxFile := p.Limits.WithDefaults().MaxFileBytes
	pub, err := p.Trees.ReplaceScriptDir(ctx, sub.ProjectID, sub.Slug, func(yield func(controlplane.ScriptDirFile) error) error {
		return subfetch.WalkTree(st.Dir, maxFile, func(path string, exec bool, data []byte) error {
			return yield(controlplane.ScriptDirFile{Path: path, Executable: exec, Data: data})
		})
	})
	if err != nil {
		return Result{}, fmt.Errorf("publishing the tree: %w", err)
	}
	fmt.Fprintf(log, "published %s/: %d files, %d bytes, %d removed, %d script tasks re-pinned\n",
		sub.Slug, pub.Files, pub.Bytes, pub.Removed, pub.Repinned)
	for _, k := range pub.Kept {
		fmt.Fprintf(log, "kept %s: a task still runs it\n", k)
	}
	changes, err := p.plan(ctx, sub, st.Dir)
	if err != nil {
		return Result{}, err
	}
	applied, err := p.apply(ctx, sub, changes, log)
	res := Result{Commit: st.Commit, Skipped: st.Skipped, Published: pub, Changes: applied}
	if err != nil {
		return res, err
	}
	counts := map[string]any{}
	for _, c := range applied {
		if n, ok := counts[c.Action].(int); ok {
			counts[c.Action] = n + 1
		} else {
			counts[c.Action] = 1
		}
	}
	if _, err := p.Subs.RecordSubscriptionPull(ctx, sub.ID, st.Commit, counts); err != nil {
		return res, err
	}
	fmt.Fprintf(log, "done: %s\n", st.Commit)
	return res, nil
}

// Preview is what a pull would do now, over a freshly staged tree that is
// then discarded: nothing is published, no task changes.
type Preview = controlplane.SubscriptionPreview

// Preview stages the subscription into a stage of its own, plans, and
// discards the stage.
func (p *Puller) Preview(ctx context.Context, subID string) (Preview, error) {
	sub, err := p.Subs.GetSubscription(ctx, subID)
	if err != nil {
		return Preview{}, err
	}
	st, err := p.stage(ctx, sub, "preview", io.Discard)
	if err != nil {
		return Preview{}, errs.E(errs.Invalid, "url", "the pull fails: %v", err)
	}
	defer st.Discard()
	changes, err := p.plan(ctx, sub, st.Dir)
	skipped := make([]controlplane.SubscriptionSkip, 0, len(st.Skipped))
	for _, k := range st.Skipped {
		skipped = append(skipped, controlplane.SubscriptionSkip{Path: k.Path, Reason: k.Reason})
	}
	return Preview{Commit: st.Commit, Skipped: skipped, Changes: changes}, err
}

// Forget removes this replica's cache and stages of a deleted subscription.
func (p *Puller) Forget(subID string) error {
	if p.WorkDir == "" || subID == "" {
		return nil
	}
	return os.RemoveAll(filepath.Join(p.WorkDir, filepath.Base(subID)))
}
