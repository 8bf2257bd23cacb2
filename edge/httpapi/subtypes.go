package httpapi

import (
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/core/subwire"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/deps"
	"github.com/ql3/ql3/edge/subs"
)

// SubscriptionRequest creates or replaces a subscription (ADR 0054; the
// shape both binaries take).
type SubscriptionRequest = subwire.SubscriptionRequest

// Subscription is a subscription as the API shows it.
type Subscription struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Slug            string   `json:"slug"`
	Kind            string   `json:"kind"`
	URL             string   `json:"url"`
	Branch          string   `json:"branch"`
	Credential      string   `json:"credential"`
	CredentialKind  string   `json:"credentialKind"`
	Include         []string `json:"include"`
	Exclude         []string `json:"exclude"`
	Extensions      []string `json:"extensions"`
	Schedule        string   `json:"schedule"`
	AutoAddTasks    bool     `json:"autoAddTasks"`
	AutoRemoveTasks bool     `json:"autoRemoveTasks"`
	RemoveMode      string   `json:"removeMode"`
	DefaultCron     string   `json:"defaultCron"`
	Proxy           string   `json:"proxy"`
	TimeZone        string   `json:"timeZone"`
	Enabled         bool     `json:"enabled"`
	TaskID          string   `json:"taskId"`
	LastCommit      string   `json:"lastCommit"`
	LastPullAtMs    int64    `json:"lastPullAtMs"`
	CreatedAtMs     int64    `json:"createdAtMs"`
	UpdatedAtMs     int64    `json:"updatedAtMs"`
}

// SubscriptionList is every subscription (at most edge.MaxSubscriptions).
type SubscriptionList struct {
	Subscriptions []Subscription `json:"subscriptions"`
}

// SubscriptionPreview is what a pull would do now (nothing is written).
type SubscriptionPreview struct {
	Commit  string           `json:"commit"`
	Skipped []subs.Skip      `json:"skipped"`
	Changes []subplan.Change `json:"changes"`
}

// PullSource is what a pull's process fetches (GET /api/v1/pull/source,
// with the Run's token): the credential is the name of the variable the
// process got from the env store.
type PullSource struct {
	SubscriptionID string `json:"subscriptionId"`
	Slug           string `json:"slug"`
	Kind           string `json:"kind"`
	URL            string `json:"url"`
	Branch         string `json:"branch"`
	Proxy          string `json:"proxy"`
	Credential     string `json:"credential"`
	CredentialKind string `json:"credentialKind"`
	ScriptsDir     string `json:"scriptsDir"`
	WorkDir        string `json:"workDir"`
}

// PullAppliedRequest reports a swapped-in tree (POST /api/v1/pull/applied).
type PullAppliedRequest struct {
	Commit string `json:"commit"`
}

// PullApplied is the plan the server applied over the new tree.
type PullApplied struct {
	Changes []subplan.Change `json:"changes"`
}

// DependencyRequest adds a dependency and starts its install.
type DependencyRequest struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Dependency is a dependency with the state its last Run says.
type Dependency struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	State       string `json:"state"` // new | installing | installed | failed | removing | removed | cancelled
	TaskID      string `json:"taskId"`
	LastAction  string `json:"lastAction"`
	LastRunID   string `json:"lastRunId"`
	CreatedAtMs int64  `json:"createdAtMs"`
	UpdatedAtMs int64  `json:"updatedAtMs"`
}

// DependencyList is every dependency (at most edge.MaxDependencies).
type DependencyList struct {
	Dependencies []Dependency `json:"dependencies"`
}

// DependencyAction is a dependency and the Run an action started.
type DependencyAction struct {
	Dependency Dependency `json:"dependency"`
	Run        Run        `json:"run"`
}

// DependencySettings are a kind's registry and proxy.
type DependencySettings struct {
	Kind     string `json:"kind"`
	Registry string `json:"registry"`
	Proxy    string `json:"proxy"`
}

func subscriptionView(s edge.Subscription) Subscription {
	nz := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return Subscription{ID: s.ID, Name: s.Name, Slug: s.Slug, Kind: s.Kind, URL: s.URL, Branch: s.Branch,
		Credential: s.Credential, CredentialKind: s.CredentialKind, Include: nz(s.Filter.Include), Exclude: nz(s.Filter.Exclude),
		Extensions: nz(s.Filter.Extensions), Schedule: s.Schedule, AutoAddTasks: s.AutoAdd, AutoRemoveTasks: s.AutoRemove,
		RemoveMode: s.RemoveMode, DefaultCron: s.DefaultCron, Proxy: s.Proxy, TimeZone: s.TimeZone, Enabled: s.Enabled,
		TaskID: s.TaskID, LastCommit: s.LastCommit, LastPullAtMs: s.LastPullAtMs, CreatedAtMs: s.CreatedAtMs, UpdatedAtMs: s.UpdatedAtMs}
}

func dependencyView(d edge.Dependency, last *edge.Run) Dependency {
	return Dependency{ID: d.ID, Kind: d.Kind, Name: d.Name, Version: d.Version, State: deps.State(d, last), TaskID: d.TaskID,
		LastAction: d.LastAction, LastRunID: d.LastRunID, CreatedAtMs: d.CreatedAtMs, UpdatedAtMs: d.UpdatedAtMs}
}
