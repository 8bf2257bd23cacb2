package postgres

import "github.com/ql3/ql3/controlplane"

// The ports this package implements (controlplane/ports.go,
// controlplane/worker_ports.go, controlplane/feed.go).
var (
	_ controlplane.RunOperations = (*RunOps)(nil)
	_ controlplane.Scheduling    = (*Scheduler)(nil)
	_ controlplane.SessionPort   = (*Sessions)(nil)
	_ controlplane.LeasePort     = (*Dispatcher)(nil)
	_ controlplane.Authenticator = (*WorkerAuth)(nil)
	_ controlplane.PullPacer     = (*PullPacer)(nil)
	_ controlplane.RunEventFeed  = (*Feed)(nil)
	_ controlplane.FeedConsumers = (*Feed)(nil)
)
