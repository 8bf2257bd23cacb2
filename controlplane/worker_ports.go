package controlplane

import (
	"context"
	"time"

	"github.com/ql3/ql3/core/protocol"
)

// SessionPort serves /v1/sessions/*. Implemented on the ingress role
// (controlplane/postgres session_*.go). Every method checks that the body's
// session belongs to p.WorkerID (else errs.Conflict, nothing changes) and
// uses the database clock.
type SessionPort interface {
	// Open gives generation 1, or atomically replaces the worker's live
	// session with generation + 1 (the old one then answers Replaced).
	Open(ctx context.Context, p Principal, body protocol.SessionOpen) (protocol.SessionState, error)
	// Heartbeat renews the session lease (45 s) and records the observed
	// credential. It does not touch run leases: the ingress then calls
	// LeasePort.RenewForHeartbeat and puts its controls into the state.
	Heartbeat(ctx context.Context, p Principal, body protocol.SessionHeartbeat) (protocol.SessionState, error)
	// Transition moves the session to draining (capacity 0) or offline,
	// fenced by worker + session + generation.
	Transition(ctx context.Context, p Principal, body protocol.SessionTransition) (protocol.SessionState, error)
}

// LeasePort serves offers and the per-attempt lifecycle. Implemented on the
// runtime role by the dispatch side (controlplane/postgres offer_*/lease_*).
// Errors are core/errs codes; the ingress maps them with errs.HTTPStatus
// (conflict 409, invalid 400, not_found 404, unavailable 503, anything
// uncoded 500 with the detail logged, never sent).
type LeasePort interface {
	// Pull claims at most one offer for the principal's session. A nil
	// offer means nothing runnable now: the ingress answers 204 with the
	// pause retryAfter (the idle pause; 0 → 1 s), shortened by the
	// PullPacer when one is configured, as Ql3-Retry-After-Ms and as
	// Retry-After = protocol.RetryAfterSeconds(pause).
	// The exact same request after a lost response returns the identical
	// offer rebuilt from the durable lease.
	Pull(ctx context.Context, p Principal, req protocol.OfferPullRequest) (offer *protocol.Offer, retryAfter time.Duration, err error)
	// Ack records starting/running; exact replays answer the current control.
	Ack(ctx context.Context, p Principal, ack protocol.Ack) (protocol.LeaseControl, error)
	// Log stores one offset-addressed chunk.
	Log(ctx context.Context, p Principal, chunk protocol.LogChunk) (protocol.LogReceipt, error)
	// Complete records a completion: recorded | duplicate | late.
	Complete(ctx context.Context, p Principal, c protocol.Completion) (protocol.CompletionReceipt, error)
	// RenewForHeartbeat answers each listed attempt, in the same order,
	// with exactly one control: extend (lease held by exactly this
	// session+generation and live), cancel (held, a cancel or timeout
	// intent is set) or revoke (anything else, including a session that is
	// not live by database time, replaced or offline; a revoke for an
	// attempt the session never held carries no run/lease fields). It runs
	// after the session heartbeat committed (its own transaction on the
	// runtime pool); an error makes the heartbeat answer 503, the worker
	// retries the heartbeat.
	RenewForHeartbeat(ctx context.Context, p Principal, sessionID string, generation int64, attemptIDs []string) ([]protocol.LeaseControl, error)
}

// PullPacer shortens the pause of an empty pull to just after the cluster's
// next scheduled occurrence (ADR 0030). Implemented by postgres.PullPacer
// on the runtime role, from a per-replica forecast: it must answer from
// memory, never with a database round trip per pull.
type PullPacer interface {
	// PullPauseMs returns the pause for an empty pull, given the
	// dispatcher's idle pause: within [protocol.MinRetryAfterMs, idleMs].
	PullPauseMs(idleMs int64) int64
}
