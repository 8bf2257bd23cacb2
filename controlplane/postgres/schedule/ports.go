package schedule

import "github.com/ql3/ql3/controlplane"

// The ports this package implements (controlplane/ports.go,
// controlplane/worker_ports.go).
var (
	_ controlplane.Scheduling = (*Scheduler)(nil)
)
