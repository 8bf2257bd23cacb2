// Package notify delivers ql3-edge's notifications (ADR 0046): a deliverer
// follows the run-event feed with a durable consumer cursor, turns the
// outcomes that rules select into outbox rows (in the same transaction
// that advances the cursor), and delivers each row at least once with its
// idempotency key, retrying with backoff and jitter until it is accepted
// or given up. Scripts add rows through a per-Run token (sendNotify).
//
// The decisions are core/notify's and the providers' requests
// core/notify/channel's; this package does the I/O and keeps the clock.
package notify

import (
	"context"

	"github.com/ql3/ql3/edge"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
)

// ConsumerName is the deliverer's cursor in the run-event feed.
const ConsumerName = "notify"

// Store is what the notifications need of the edge's database.
type Store interface {
	CreateChannel(ctx context.Context, in ChannelInput, actor string) (Channel, error)
	UpdateChannel(ctx context.Context, id string, p ChannelPatch, actor string) (Channel, error)
	DeleteChannel(ctx context.Context, id, actor string) error
	GetChannel(ctx context.Context, id string) (Channel, error)
	ListChannels(ctx context.Context) ([]Channel, error)
	// ChannelSettings opens a channel's sealed settings (the deliverer's
	// read; nothing else sees credentials).
	ChannelSettings(ctx context.Context, id string) (channel.Settings, Channel, error)

	CreateRule(ctx context.Context, in RuleInput, actor string) (Rule, error)
	ReplaceRule(ctx context.Context, id string, in RuleInput, actor string) (Rule, error)
	DeleteRule(ctx context.Context, id, actor string) error
	GetRule(ctx context.Context, id string) (Rule, error)
	ListRules(ctx context.Context) ([]Rule, error)

	// Enqueue writes rows and coalescing states and moves the feed
	// consumer's cursor from → to, in one transaction (errs.Conflict when
	// the cursor is not at from). A row whose key exists is skipped.
	Enqueue(ctx context.Context, consumer string, from, to int64, rows []NewDelivery, states map[CoalesceKey]cn.CoalesceState) error
	// AddDeliveries writes rows without a cursor (sendNotify, tests).
	AddDeliveries(ctx context.Context, rows []NewDelivery) ([]int64, error)
	CoalesceStates(ctx context.Context) (map[CoalesceKey]cn.CoalesceState, error)
	// Due lists pending rows with next_at_ms ≤ nowMs, oldest first.
	Due(ctx context.Context, nowMs int64, limit int) ([]Delivery, error)
	// HeldDue lists held rows whose window ended by nowMs.
	HeldDue(ctx context.Context, nowMs int64, limit int) ([]Delivery, error)
	// Digest writes the digest row and marks the held rows digested, in one
	// transaction.
	Digest(ctx context.Context, digest NewDelivery, held []int64) error
	// NextDueMs is the earliest next_at_ms of a pending or held row.
	NextDueMs(ctx context.Context) (int64, bool, error)
	Record(ctx context.Context, id int64, o Outcome) error
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, error)
	GetDelivery(ctx context.Context, id int64) (Delivery, error)
	// Audit writes one audit line (a channel's "send test").
	Audit(ctx context.Context, a edge.AuditEntry) error
}
