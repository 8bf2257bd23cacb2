package dispatch

import "github.com/ql3/ql3/controlplane"

// The ports this package implements (controlplane/worker_ports.go,
// controlplane/worker_batch_ports.go).
var (
	_ controlplane.LeasePort      = (*Dispatcher)(nil)
	_ controlplane.LeaseBatchPort = (*Dispatcher)(nil)
)
