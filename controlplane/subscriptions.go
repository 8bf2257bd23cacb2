package controlplane

import (
	"context"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

// Subscriptions per project (issue 24, ADR 0054 for the edge, ADR 0061 for
// the cluster): a git repository or a raw file pulled into the project's
// scripts folder under <slug>/, whose scripts' cron comments become tasks
// of the project. The definition and its checks are core/subdef's (the
// edge's too); every pull is a Run of the subscription's system task.

// MaxSubscriptionsPerProject bounds a project's subscriptions (every list
// answers in one page).
const MaxSubscriptionsPerProject = 200

// Subscription is one subscription as stored and shown.
type Subscription struct {
	ID             string         `json:"id"`
	ProjectID      string         `json:"projectId"`
	Name           string         `json:"name"`
	Slug           string         `json:"slug"`
	Kind           string         `json:"kind"`
	URL            string         `json:"url"`
	Branch         string         `json:"branch"`
	Credential     string         `json:"credential"`
	CredentialKind string         `json:"credentialKind"`
	Filter         subplan.Filter `json:"filter"`
	Schedule       string         `json:"schedule"`
	AutoAdd        bool           `json:"autoAddTasks"`
	AutoRemove     bool           `json:"autoRemoveTasks"`
	RemoveMode     string         `json:"removeMode"`
	DefaultCron    string         `json:"defaultCron"`
	Proxy          string         `json:"proxy"`
	TimeZone       string         `json:"timeZone"`
	Enabled        bool           `json:"enabled"`
	TaskID         string         `json:"taskId,omitempty"` // the system task, "" until published
	LastCommit     string         `json:"lastCommit,omitempty"`
	LastPullAtMs   int64          `json:"lastPullAtMs,omitempty"`
	Version        int64          `json:"version"`
	CreatedAtMs    int64          `json:"createdAtMs"`
	UpdatedAtMs    int64          `json:"updatedAtMs"`
}

// Def is the definition a subscription is created or replaced with.
func (s Subscription) Def() subdef.Def {
	return subdef.Def{Name: s.Name, Slug: s.Slug, Kind: s.Kind, URL: s.URL, Branch: s.Branch,
		Credential: s.Credential, CredentialKind: s.CredentialKind, Filter: s.Filter, Schedule: s.Schedule,
		AutoAdd: s.AutoAdd, AutoRemove: s.AutoRemove, RemoveMode: s.RemoveMode, DefaultCron: s.DefaultCron,
		Proxy: s.Proxy, TimeZone: s.TimeZone, Enabled: s.Enabled}
}

// SubscriptionTask is what a subscription applied to a task it made: the
// script (relative to the subscription's folder), the declared name, the
// task name it got, the cron, and the task revision and spec digest it
// wrote. A task whose name, spec digest or trigger differ from these was
// edited by a person (a re-pin of its script tree is not an edit: a new
// revision, the same spec).
type SubscriptionTask struct {
	SubscriptionID  string
	TaskID          string
	Path            string
	AppliedName     string
	GivenName       string
	AppliedCron     string
	AppliedRevision int64
	AppliedDigest   canonjson.Digest
}

// Audit actions of subscriptions; the task changes a pull makes carry
// origin "subscription:<id>" in their details.
const (
	AuditSubCreate  = "subscription.create"
	AuditSubUpdate  = "subscription.update"
	AuditSubDelete  = "subscription.delete"
	AuditSubPull    = "subscription.pull"
	AuditSubAddTask = "subscription.task_add"
	AuditSubUpdTask = "subscription.task_update"
	AuditSubDisTask = "subscription.task_disable"
	AuditSubDelTask = "subscription.task_remove"
)

// SubscriptionOrigin is the origin an audit line of a pull's change names.
func SubscriptionOrigin(id string) string { return "subscription:" + id }

// SubscriptionStore keeps a project's subscriptions and the tasks they
// made (admin role). Every write is audited in its transaction as ctx's
// actor; definitions are checked with core/subdef.Check.
type SubscriptionStore interface {
	CreateSubscription(ctx context.Context, projectID string, in subdef.Def) (Subscription, error)
	// UpdateSubscription replaces the definition; expectedVersion 0 skips
	// the version check, another stale one is a conflict.
	UpdateSubscription(ctx context.Context, id string, expectedVersion int64, in subdef.Def) (Subscription, error)
	// DeleteSubscription removes the subscription and its records of the
	// tasks it made (the tasks and the published folder stay).
	DeleteSubscription(ctx context.Context, id string) (Subscription, error)
	GetSubscription(ctx context.Context, id string) (Subscription, error)
	// GetSubscriptionByTask finds the subscription whose system task is taskID.
	GetSubscriptionByTask(ctx context.Context, taskID string) (Subscription, error)
	ListSubscriptions(ctx context.Context, projectID string) ([]Subscription, error)
	// SetSubscriptionTask records the system task of a subscription.
	SetSubscriptionTask(ctx context.Context, id, taskID string) error
	// SubscriptionPlanTasks lists the tasks the subscription made as the
	// planner sees them (applied values against the task as it is now; a
	// deleted task or another revision is hand-edited).
	SubscriptionPlanTasks(ctx context.Context, id string) ([]subplan.Task, error)
	// RecordSubscriptionTask records (or replaces) what a pull applied to a task.
	RecordSubscriptionTask(ctx context.Context, t SubscriptionTask) error
	// ForgetSubscriptionTask drops the record of a task the pull removed.
	ForgetSubscriptionTask(ctx context.Context, id, taskID string) error
	// RecordSubscriptionPull records the commit now published and audits
	// the pull with its counts.
	RecordSubscriptionPull(ctx context.Context, id, commit string, details map[string]any) (Subscription, error)
}

// ScriptDirFile is one file a pull publishes, relative to the folder.
type ScriptDirFile struct {
	Path       string
	Executable bool
	Data       []byte
}

// ScriptDirResult says what a publication of a folder did.
type ScriptDirResult struct {
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	Removed int   `json:"removed"`
	// Kept are files the new tree lacks that a live script task still
	// runs: a script a task runs is never deleted under it (ADR 0052);
	// the next pull removes them once no task runs them.
	Kept []string `json:"kept,omitempty"`
	// Repinned counts the script tasks that got the new tree.
	Repinned int `json:"repinned"`
}

// ScriptDirPublisher publishes a pulled tree into a project's scripts
// folder (admin role).
type ScriptDirPublisher interface {
	// ReplaceScriptDir makes the folder dir hold exactly the files walk
	// yields (in one SERIALIZABLE transaction: one new version of the
	// folder, audited, the script tasks of the folder re-pinned; Runs in
	// flight keep the tree they started with). Nothing is written unless
	// all of it passes the folder's rules and limits. walk may be called
	// again when the transaction is retried.
	ReplaceScriptDir(ctx context.Context, projectID, dir string, walk func(yield func(ScriptDirFile) error) error) (ScriptDirResult, error)
}

// SubscriptionSkip is a tree entry a pull leaves out, with the reason.
type SubscriptionSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// SubscriptionPreview is what a pull would do now (nothing written).
type SubscriptionPreview struct {
	Commit  string             `json:"commit"`
	Skipped []SubscriptionSkip `json:"skipped"`
	Changes []subplan.Change   `json:"changes"`
}

// Subscriptions is the admin API's port (controlplane/subrun.Service):
// the store's reads, writes that keep the system task, and pulls started
// as Runs of it.
type Subscriptions interface {
	ListSubscriptions(ctx context.Context, projectID string) ([]Subscription, error)
	GetSubscription(ctx context.Context, id string) (Subscription, error)
	CreateSubscription(ctx context.Context, projectID string, in subdef.Def) (Subscription, error)
	UpdateSubscription(ctx context.Context, id string, expectedVersion int64, in subdef.Def) (Subscription, error)
	DeleteSubscription(ctx context.Context, id string) (Subscription, error)
	// PullSubscription starts a pull now: a manual Run of the system task.
	PullSubscription(ctx context.Context, id, idempotencyKey, actor string) (RunNowResult, error)
	PreviewSubscription(ctx context.Context, id string) (SubscriptionPreview, error)
}
