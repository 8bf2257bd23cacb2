package depapi

import "github.com/ql3/ql3/controlplane"

// DependencyRequest creates a dependency (and installs it).
type DependencyRequest struct {
	Kind    string            `json:"kind"`
	Name    string            `json:"name"`
	Version string            `json:"version,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"` // placement labels selecting workers; none = every worker
}

// Dependency is a dependency with what each worker has of it.
type Dependency struct {
	controlplane.Dependency
	Installs []controlplane.DependencyInstall `json:"installs"`
}

// DependencyList is the list of a project's dependencies.
type DependencyList struct {
	Dependencies []Dependency `json:"dependencies"`
}

// DependencyRun is one worker's Run of an action (or of a cancel).
type DependencyRun struct {
	WorkerID   string `json:"workerId"`
	WorkerName string `json:"workerName"`
	RunID      string `json:"runId"`
	Cancel     string `json:"cancel,omitempty"` // the cancel's outcome
}

// DependencyAction is what an action (or a cancel) started.
type DependencyAction struct {
	Dependency Dependency      `json:"dependency"`
	Runs       []DependencyRun `json:"runs"`
}
