// Package dispatch is the worker ingress's side of the PostgreSQL adapter:
// offers (pull, claim, replay), leases (acks, heartbeat renewal, logs,
// completion, the fences) and the pull pacer. It implements
// controlplane.LeasePort and controlplane.PullPacer on the runtime role.
package dispatch
