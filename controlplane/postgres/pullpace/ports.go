package pullpace

import "github.com/ql3/ql3/controlplane"

// The port this package implements (controlplane/worker_ports.go).
var _ controlplane.PullPacer = (*PullPacer)(nil)
