package controlplane

import (
	"context"

	"github.com/google/uuid"
)

// Overload (issue 28 point 5, ADR 0066): when the Runs offered exceed what
// the workers take, the queue grows and its oldest Run waits longer and
// longer. The control plane says so — per project and priority on
// /metrics, and as a detail of /readyz — without ever turning not ready:
// a replica that cannot place work because workers are short is still the
// right replica to ask. Fairness under overload is the claim's order,
// priority first, then FIFO (created_at_ms, run_id), which the queue's
// oldest age reports on.

// DefaultOverloadQueueAgeMs is the oldest-queued age above which the queue
// counts as overloaded.
const DefaultOverloadQueueAgeMs = 30_000

// MaxQueueGroups bounds the groups one QueueReport lists (the oldest
// first); the totals always cover the whole queue.
const MaxQueueGroups = 64

// QueueGroup is the queued Runs of one project at one priority.
type QueueGroup struct {
	ProjectID uuid.UUID `json:"projectId"`
	Priority  int       `json:"priority"`
	// Depth counts the group's queued Runs.
	Depth int64 `json:"depth"`
	// OldestAgeMs is how long the group's oldest Run has waited to be
	// taken, by database time: since it was queued (its creation when it
	// was never held) or, with a random delay, since it became eligible.
	OldestAgeMs int64 `json:"oldestAgeMs"`
}

// QueueReport is the queue as one snapshot: the totals and up to
// MaxQueueGroups groups, oldest first (Truncated when more exist).
type QueueReport struct {
	Depth       int64        `json:"depth"`
	OldestAgeMs int64        `json:"oldestAgeMs"`
	Groups      []QueueGroup `json:"groups"`
	Truncated   bool         `json:"truncated"`
}

// QueueHealth is the /readyz detail: Overloaded when the oldest queued Run
// has waited longer than ThresholdMs.
type QueueHealth struct {
	Overloaded        bool  `json:"overloaded"`
	Depth             int64 `json:"depth"`
	OldestQueuedAgeMs int64 `json:"oldestQueuedAgeMs"`
	ThresholdMs       int64 `json:"thresholdMs"`
}

// Health judges the report against thresholdMs (≤ 0 means
// DefaultOverloadQueueAgeMs).
func (r QueueReport) Health(thresholdMs int64) QueueHealth {
	if thresholdMs <= 0 {
		thresholdMs = DefaultOverloadQueueAgeMs
	}
	return QueueHealth{Overloaded: r.Depth > 0 && r.OldestAgeMs > thresholdMs, Depth: r.Depth,
		OldestQueuedAgeMs: r.OldestAgeMs, ThresholdMs: thresholdMs}
}

// QueueReader reads the queue (postgres/queuestat on the admin pool).
type QueueReader interface {
	ReadQueue(ctx context.Context) (QueueReport, error)
}
