package edge

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/subplan"
)

// Subscription kinds (ADR 0054).
const (
	SubscriptionGit  = "git"  // a git repository, one branch
	SubscriptionFile = "file" // one raw file fetched by URL
)

// Credential kinds: what the env store entry named by Credential holds.
const (
	CredentialToken  = "token"   // an HTTPS token (sent as the password)
	CredentialSSHKey = "ssh_key" // an SSH private key
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
type NewSubscription struct {
	Name           string
	Slug           string
	Kind           string
	URL            string
	Branch         string
	Credential     string
	CredentialKind string
	Filter         subplan.Filter
	Schedule       string
	AutoAdd        bool
	AutoRemove     bool
	RemoveMode     string
	DefaultCron    string
	Proxy          string
	TimeZone       string
	Enabled        bool
}

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

var (
	slugRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	branchRe  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}$`)
	scpLikeRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9.-]+:[A-Za-z0-9_~][A-Za-z0-9._/~-]*$`)
	credRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// CheckSubscription validates a subscription and returns it normalized
// (name NFC, slug derived when empty, remove mode defaulted).
func CheckSubscription(in NewSubscription) (NewSubscription, error) {
	n, err := names.CheckDisplay("name", in.Name)
	if err != nil {
		return in, err
	}
	in.Name = n
	switch in.Kind {
	case SubscriptionGit:
		if err := checkGitURL(in.URL); err != nil {
			return in, err
		}
		if in.Branch != "" && (!branchRe.MatchString(in.Branch) || strings.Contains(in.Branch, "..") ||
			strings.HasSuffix(in.Branch, ".lock") || strings.HasSuffix(in.Branch, "/")) {
			return in, errs.Invalidf("branch", "%.64q is not a branch name git accepts", in.Branch)
		}
	case SubscriptionFile:
		if err := checkHTTPURL("url", in.URL, "http", "https", "file"); err != nil {
			return in, err
		}
		if in.Branch != "" {
			return in, errs.Invalidf("branch", "only a git subscription has a branch")
		}
	default:
		return in, errs.Invalidf("kind", "must be %q or %q, got %.32q", SubscriptionGit, SubscriptionFile, in.Kind)
	}
	if in.Slug == "" {
		in.Slug = SlugFromURL(in.URL)
	}
	if !slugRe.MatchString(in.Slug) {
		return in, errs.Invalidf("slug", "must be 1..64 of A-Z a-z 0-9 . _ - and start with a letter or digit, got %.64q", in.Slug)
	}
	switch {
	case in.Credential == "" && in.CredentialKind != "":
		return in, errs.Invalidf("credentialKind", "needs a credential")
	case in.Credential != "" && !credRe.MatchString(in.Credential):
		return in, errs.Invalidf("credential", "must name an env store entry, got %.64q", in.Credential)
	case in.Credential != "" && in.CredentialKind != CredentialToken && in.CredentialKind != CredentialSSHKey:
		return in, errs.Invalidf("credentialKind", "must be %q or %q", CredentialToken, CredentialSSHKey)
	case in.Credential != "" && in.Kind == SubscriptionFile && in.CredentialKind != CredentialToken:
		return in, errs.Invalidf("credentialKind", "a file subscription takes a token only")
	}
	if err := in.Filter.Validate(); err != nil {
		return in, errs.Prefix("filter", err)
	}
	for _, c := range []struct{ field, expr string }{{"schedule", in.Schedule}, {"defaultCron", in.DefaultCron}} {
		if c.expr == "" {
			continue
		}
		if _, err := cron.Parse(c.expr, time.UTC); err != nil {
			return in, errs.Invalidf(c.field, "%.64q is not a cron expression: %v", c.expr, err)
		}
	}
	switch in.RemoveMode {
	case "":
		in.RemoveMode = subplan.RemoveDisable
	case subplan.RemoveDisable, subplan.RemoveDelete:
	default:
		return in, errs.Invalidf("removeMode", "must be %q or %q, got %.32q", subplan.RemoveDisable, subplan.RemoveDelete, in.RemoveMode)
	}
	if in.Proxy != "" {
		if err := checkHTTPURL("proxy", in.Proxy, "http", "https", "socks5", "socks5h"); err != nil {
			return in, err
		}
	}
	if in.TimeZone != "" {
		if _, err := time.LoadLocation(in.TimeZone); err != nil || in.TimeZone == "Local" {
			return in, errs.Invalidf("timeZone", "%.64q is not an IANA time zone", in.TimeZone)
		}
	}
	return in, nil
}

// checkGitURL accepts https, http, ssh, git and file URLs and the scp-like
// user@host:path form, without credentials in the URL (they come from the
// env store) and never starting with '-' (git would read an option).
func checkGitURL(u string) error {
	if scpLikeRe.MatchString(u) {
		return nil
	}
	return checkHTTPURL("url", u, "https", "http", "ssh", "git", "file")
}

func checkHTTPURL(field, raw string, schemes ...string) error {
	return depcmd.CheckURL(field, raw, schemes...)
}

// SlugFromURL derives a folder name from a URL's last path element
// ("https://h/o/scripts.git" → "scripts"), "sub" when nothing usable is left.
func SlugFromURL(u string) string {
	u = strings.TrimRight(u, "/")
	if i := strings.LastIndexAny(u, "/:"); i >= 0 {
		u = u[i+1:]
	}
	u = strings.TrimSuffix(u, ".git")
	var b strings.Builder
	for _, r := range u {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "._-")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "sub"
	}
	return s
}

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
