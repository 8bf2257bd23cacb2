package edge

import (
	"context"

	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

// Subscription kinds (ADR 0054); the definition and its checks are
// core/subdef's, shared with the control plane.
const (
	SubscriptionGit  = subdef.Git  // a git repository, one branch
	SubscriptionFile = subdef.File // one raw file fetched by URL
)

// Credential kinds: what the env store entry named by Credential holds.
const (
	CredentialToken  = subdef.Token  // an HTTPS token (sent as the password)
	CredentialSSHKey = subdef.SSHKey // an SSH private key
)

// Bounds of the subscription and dependency lists (every list answers in
// one bounded page).
const (
	MaxSubscriptions = 200
	MaxDependencies  = 1000
)

// Subscription is a repository (or file) pulled into scripts/<Slug>/ on a
// schedule, whose scripts' cron comments become tasks (ADR 0054).
type Subscription struct {
	ID             string
	Name           string
	Slug           string // the folder under the scripts folder
	Kind           string // git | file
	URL            string
	Branch         string // git: "" = the remote's default branch
	Credential     string // env store entry name, "" = none
	CredentialKind string // token | ssh_key, "" with no credential
	Filter         subplan.Filter
	Schedule       string // cron expression of the pulls, "" = by hand only
	AutoAdd        bool
	AutoRemove     bool
	RemoveMode     string // subplan.RemoveDisable | subplan.RemoveDelete
	DefaultCron    string // for scripts that declare none, "" = skip them
	Proxy          string
	TimeZone       string // of the tasks' triggers and the pull schedule, "" = UTC
	Enabled        bool
	TaskID         string // the system task whose Runs are the pulls, "" until published
	LastCommit     string // git: the commit of the tree in place
	LastPullAtMs   int64
	CreatedAtMs    int64
	UpdatedAtMs    int64
}

// NewSubscription is the input of CreateSubscription and (full
// replacement) UpdateSubscription. An empty Slug is derived from the URL.
type NewSubscription = subdef.Def

// SubscriptionApply is a plan to apply: the changes of subplan.Plan over
// the tree now in place (Commit) at PulledAtMs.
type SubscriptionApply struct {
	SubscriptionID string
	Changes        []subplan.Change
	Commit         string
	PulledAtMs     int64
	Actor          string
}

// Dependency kinds (ADR 0055).
const (
	DependencyNode   = depcmd.Node
	DependencyPython = depcmd.Python
	DependencyLinux  = depcmd.Linux
)

// Dependency actions: each is a Run of the dependency's system task.
const (
	DepInstall   = depcmd.Install
	DepReinstall = depcmd.Reinstall
	DepRemove    = depcmd.Remove
)

// Dependency is a package the scripts need.
type Dependency struct {
	ID          string
	Kind        string
	Name        string
	Version     string // "" = the newest
	TaskID      string // its system task, "" until the first action
	LastAction  string // install | reinstall | remove, "" before any
	LastRunID   string
	CreatedAtMs int64
	UpdatedAtMs int64
}

// NewDependency is the input of CreateDependency.
type NewDependency struct {
	Kind    string
	Name    string
	Version string
}

// DependencySettings are the registry and proxy of one kind's installs.
type DependencySettings struct {
	Kind     string
	Registry string // npm registry / pip index URL, "" = the tool's default
	Proxy    string
}

// SubscriptionStore keeps subscriptions, the tasks they made, and
// dependencies. Every write is audited in its transaction; actor is who
// asked ("import" for the QingLong import).
type SubscriptionStore interface {
	CreateSubscription(ctx context.Context, in NewSubscription, actor string) (Subscription, error)
	UpdateSubscription(ctx context.Context, id string, in NewSubscription, actor string) (Subscription, error)
	DeleteSubscription(ctx context.Context, id, actor string) error
	GetSubscription(ctx context.Context, id string) (Subscription, error)
	ListSubscriptions(ctx context.Context) ([]Subscription, error)
	// SetSubscriptionTask records the system task of a subscription.
	SetSubscriptionTask(ctx context.Context, id, taskID string) error
	// SubscriptionPlanTasks lists the tasks a subscription made as the
	// planner sees them (what was applied, what the task is now).
	SubscriptionPlanTasks(ctx context.Context, id string) ([]subplan.Task, error)
	// ApplySubscriptionPlan applies a plan's mutating changes in one
	// transaction, each audited with the subscription as its origin.
	ApplySubscriptionPlan(ctx context.Context, in SubscriptionApply) ([]subplan.Change, error)

	CreateDependency(ctx context.Context, in NewDependency, actor string) (Dependency, error)
	DeleteDependency(ctx context.Context, id, actor string) error
	GetDependency(ctx context.Context, id string) (Dependency, error)
	ListDependencies(ctx context.Context, kind string) ([]Dependency, error)
	// RecordDependencyAction records the system task and the Run of an action.
	RecordDependencyAction(ctx context.Context, id, taskID, action, runID, actor string) (Dependency, error)
	GetDependencySettings(ctx context.Context, kind string) (DependencySettings, error)
	SetDependencySettings(ctx context.Context, in DependencySettings, actor string) (DependencySettings, error)
}

// Audit actions of subscriptions and dependencies; the origin of a task
// change is the subscription (Target = task id, Detail names it).
const (
	AuditSubCreate   = "subscription.create"
	AuditSubUpdate   = "subscription.update"
	AuditSubDelete   = "subscription.delete"
	AuditSubAddTask  = "subscription.task_add"
	AuditSubUpdTask  = "subscription.task_update"
	AuditSubDisTask  = "subscription.task_disable"
	AuditSubDelTask  = "subscription.task_remove"
	AuditDepCreate   = "dependency.create"
	AuditDepDelete   = "dependency.delete"
	AuditDepAction   = "dependency.action"
	AuditDepSettings = "dependency.settings"
)

// CheckSubscription validates a subscription and returns it normalized
// (core/subdef.Check).
func CheckSubscription(in NewSubscription) (NewSubscription, error) { return subdef.Check(in) }

// SlugFromURL derives a folder name from a URL (core/subdef.SlugFromURL).
func SlugFromURL(u string) string { return subdef.SlugFromURL(u) }

// CheckDependency validates a dependency (core/depcmd.Check: nothing in
// a name or version can be an option or a word break, ADR 0055).
func CheckDependency(in NewDependency) (NewDependency, error) {
	d, err := depcmd.Check(depcmd.Dependency{Kind: in.Kind, Name: in.Name, Version: in.Version})
	return NewDependency{Kind: d.Kind, Name: d.Name, Version: d.Version}, err
}

// CheckDependencySettings validates a kind's registry and proxy.
func CheckDependencySettings(in DependencySettings) (DependencySettings, error) {
	_, err := depcmd.CheckSettings(depcmd.Settings(in))
	return in, err
}
