package postgres

import "github.com/ql3/ql3/controlplane"

// The ports this package implements (controlplane/feed.go). Its
// subpackages assert theirs in their own ports.go: dispatch (LeasePort,
// LeaseBatchPort), pullpace (PullPacer), session (SessionPort, Authenticator), schedule (Scheduling),
// runops (RunOperations), publication (Publication, RunReads, Workers,
// Authentication, AuditLog).
var (
	_ controlplane.RunEventFeed  = (*Feed)(nil)
	_ controlplane.FeedConsumers = (*Feed)(nil)
)
