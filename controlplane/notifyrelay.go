package controlplane

import (
	"context"

	"github.com/ql3/ql3/core/protocol"
)

// ErrNotifyRateLimited marks a sendNotify call refused by the per-Run
// limit (notifykit.ScriptCallsPerWindow); the ingress answers it 429.
const ErrNotifyRateLimited = "rate_limited"

// ScriptNotify queues a remote script's sendNotify (ADR 0053,
// "sendNotify from remote workers"): the worker relays the call under its
// attempt's lease; the message goes to the channels of the task's rules of
// kind "script" through the outbox, while the lease is live.
type ScriptNotify interface {
	// LeaseNotify proves q's lease (live, held by p) and queues the
	// message; it returns how many channels it was queued for.
	// errs.Conflict when the lease is over or not p's; an errs.Unavailable
	// whose field is ErrNotifyRateLimited past the per-Run limit.
	LeaseNotify(ctx context.Context, p Principal, q protocol.NotifySendRequest) (int, error)
}
