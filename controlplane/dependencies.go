package controlplane

import "context"

// The cluster's dependencies (issue 24, ADR 0062): packages a project's
// scripts need, on the workers the dependency's placement labels select.
// Each action is one Run per matching worker, pinned to that worker by the
// reserved placement label WorkerLabel; each worker's result is recorded
// when its Run ends (DependencyInstall). Names, versions and the shell
// lines are core/depcmd's, the edge's rules.

// WorkerLabel is the placement label the control plane gives every
// worker's session: its worker id. A Run whose spec requires it runs on
// that worker only; what a worker reports under this name is replaced.
const WorkerLabel = "ql3.worker"

// Limits of the dependency store.
const (
	MaxDependencies      = 1000 // per project
	MaxDependencyLabels  = 16
	MaxDependencyWorkers = 1000 // matching workers one action starts Runs on
)

// Dependency statuses (a dependency's sums up its installs) and install
// statuses (one worker's).
const (
	DepStatusNew        = "new"
	DepStatusInstalling = "installing"
	DepStatusInstalled  = "installed"
	DepStatusFailed     = "failed"
	DepStatusRemoving   = "removing"
	DepStatusRemoved    = "removed"
	DepStatusCancelled  = "cancelled"
)

// Dependency is a package a project's scripts need.
type Dependency struct {
	ID        string            `json:"id"`
	ProjectID string            `json:"projectId"`
	Kind      string            `json:"kind"` // node | python | linux
	Name      string            `json:"name"`
	Version   string            `json:"version"` // "" = the newest
	Labels    map[string]string `json:"labels"`  // placement labels selecting workers; {} = every worker
	// Status sums up the installs: installing/removing while one runs,
	// else failed or cancelled when one is, else the last action's outcome.
	Status      string `json:"status"`
	LastAction  string `json:"lastAction,omitempty"` // install | reinstall | remove
	CreatedAtMs int64  `json:"createdAtMs"`
	UpdatedAtMs int64  `json:"updatedAtMs"`
}

// DependencyInput creates a dependency.
type DependencyInput struct {
	ProjectID string
	Kind      string
	Name      string
	Version   string
	Labels    map[string]string
}

// DependencyInstall is what one worker has of a dependency: its last
// action's Run and, once that Run ended, what it left.
type DependencyInstall struct {
	DependencyID string `json:"dependencyId"`
	WorkerID     string `json:"workerId"`
	WorkerName   string `json:"workerName"`
	TaskID       string `json:"taskId"` // the worker's system task of the dependency
	Action       string `json:"action"`
	Version      string `json:"version"`
	RunID        string `json:"runId,omitempty"` // "" until the Run exists
	Status       string `json:"status"`          // installing | installed | failed | removing | removed | cancelled
	StartedAtMs  int64  `json:"startedAtMs"`
	FinishedAtMs int64  `json:"finishedAtMs,omitempty"` // 0 while the Run has not ended
}

// DependencyInstallInput records an action on one worker before its Run
// is created: RunKey is the run-now idempotency key the Run will carry
// (DependencyRunKeyPrefix + unique text, ≤ 128 bytes), by which the Run's
// end finds the record.
type DependencyInstallInput struct {
	DependencyID string
	WorkerID     string
	TaskID       string
	Action       string
	RunKey       string
}

// DependencyRunKeyPrefix starts the run-now idempotency key of every
// dependency action's Run.
const DependencyRunKeyPrefix = "dep:"

// DependencyWorker is a worker an action targets.
type DependencyWorker struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// DependencySettings are a project's registry (mirror) and proxy of one
// kind's installs (core/depcmd.CheckSettings).
type DependencySettings struct {
	Kind     string `json:"kind"`
	Registry string `json:"registry"`
	Proxy    string `json:"proxy"`
}

// Dependencies stores the cluster's dependencies (admin role). Writes are
// audited (dependency.create, dependency.delete, dependency.action,
// dependency.settings) with the context's actor.
type Dependencies interface {
	// CreateDependency records a dependency (core/depcmd.Check; labels as
	// placement labels); Conflict when the project has one of that kind
	// and name.
	CreateDependency(ctx context.Context, in DependencyInput) (Dependency, error)
	GetDependency(ctx context.Context, id string) (Dependency, error)
	// ListDependencies lists a project's dependencies ("" kind = all), by
	// kind and name.
	ListDependencies(ctx context.Context, projectID, kind string) ([]Dependency, error)
	// DeleteDependency forgets a dependency and its install records (what
	// the workers installed stays: remove uninstalls); it returns the
	// system tasks of its installs, for the caller to delete.
	DeleteDependency(ctx context.Context, id string) (taskIDs []string, err error)
	// DependencyWorkers lists the active workers with a live online
	// session whose labels include the dependency's, by name (at most
	// MaxDependencyWorkers).
	DependencyWorkers(ctx context.Context, id string) ([]DependencyWorker, error)
	// StartDependencyAction marks the dependency's last action; Conflict
	// while an install of it has not ended.
	StartDependencyAction(ctx context.Context, id, action string) (Dependency, error)
	// RecordDependencyInstall records an action on a worker before its Run
	// is created (installing or removing); Conflict while the worker's
	// previous install of it has not ended.
	RecordDependencyInstall(ctx context.Context, in DependencyInstallInput) (DependencyInstall, error)
	// FailDependencyInstall ends the record of an action whose Run could
	// not be created (failed, now).
	FailDependencyInstall(ctx context.Context, dependencyID, workerID, runKey string) error
	// ListDependencyInstalls lists a dependency's installs by worker name.
	ListDependencyInstalls(ctx context.Context, id string) ([]DependencyInstall, error)
	// ListProjectInstalls lists the installs of all the project's
	// dependencies in one read (each dependency's at most
	// MaxDependencyWorkers, by worker name), keyed by dependency id.
	ListProjectInstalls(ctx context.Context, projectID string) (map[string][]DependencyInstall, error)
	GetDependencySettings(ctx context.Context, projectID, kind string) (DependencySettings, error)
	SetDependencySettings(ctx context.Context, projectID string, in DependencySettings) (DependencySettings, error)
}
