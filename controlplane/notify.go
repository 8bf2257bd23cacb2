package controlplane

import (
	"context"
	"time"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
)

// Notifications on the cluster (ADR 0046, ADR 0053): channels, rules and
// the outbox per project. The records and decisions are notifykit's, the
// same as the edge's; these ports are what the admin API and the
// deliverer need of the database.

// NotifyConsumer is the deliverer's named cursor in the run-event feed.
const NotifyConsumer = "notify"

// NotifyConfig keeps a project's channels and rules and reads its delivery
// log (admin role). Every mutation writes its audit line in its own
// transaction; no method returns a credential.
type NotifyConfig interface {
	CreateChannel(ctx context.Context, projectID string, in notifykit.ChannelInput) (notifykit.Channel, error)
	UpdateChannel(ctx context.Context, projectID, id string, p notifykit.ChannelPatch) (notifykit.Channel, error)
	DeleteChannel(ctx context.Context, projectID, id string) error
	GetChannel(ctx context.Context, projectID, id string) (notifykit.Channel, error)
	ListChannels(ctx context.Context, projectID string) ([]notifykit.Channel, error)

	CreateRule(ctx context.Context, projectID string, in notifykit.RuleInput) (notifykit.Rule, error)
	ReplaceRule(ctx context.Context, projectID, id string, in notifykit.RuleInput) (notifykit.Rule, error)
	DeleteRule(ctx context.Context, projectID, id string) error
	GetRule(ctx context.Context, projectID, id string) (notifykit.Rule, error)
	ListRules(ctx context.Context, projectID string) ([]notifykit.Rule, error)

	ListDeliveries(ctx context.Context, projectID string, f notifykit.DeliveryFilter) ([]notifykit.Delivery, error)
	GetDelivery(ctx context.Context, projectID string, id int64) (notifykit.Delivery, error)
	// QueueTest records a "send test" row for a channel (and its audit
	// line) and returns its id; the deliverer sends it.
	QueueTest(ctx context.Context, projectID, channelID string, nowMs int64) (int64, error)
}

// NotifyTester sends a queued test row at once (the admin API's "send
// test" answers with the attempt's outcome).
type NotifyTester interface {
	DeliverNow(ctx context.Context, id int64) (notifykit.Delivery, error)
}

// NotifySubject is what a run event's notification needs to know of its
// Run and task.
type NotifySubject struct {
	ProjectID  string
	TaskID     string
	TaskName   string
	Labels     []string
	Status     string
	PrevFailed bool // the task's previous finished Run did not succeed
}

// DeliveryClaim is one replica's claim on one outbox row: a fenced lease in
// database time. Its outcome is recorded only while the claim holds.
type DeliveryClaim struct {
	Row         notifykit.Delivery
	ProjectID   string
	Owner       string
	Token       [16]byte
	Version     int64
	ExpiresAtMs int64
}

// NotifyOutbox is the deliverer's side of the outbox (runtime role).
type NotifyOutbox interface {
	// Subject reads a Run's task, labels and previous outcome; NotFound
	// when the Run is gone.
	Subject(ctx context.Context, runID string) (NotifySubject, error)
	// TaskName is a task's name ("" when it is gone).
	TaskName(ctx context.Context, taskID string) (string, error)
	// Rules lists the enabled rules of a project.
	Rules(ctx context.Context, projectID string) ([]notifykit.Rule, error)
	// CoalesceStates reads the stored windows of the given keys.
	CoalesceStates(ctx context.Context, keys []notifykit.CoalesceKey) (map[notifykit.CoalesceKey]cn.CoalesceState, error)
	// Enqueue writes rows (each names its project) and windows and advances the
	// consumer's cursor under its claim, in one transaction; a row whose
	// key exists is skipped. errs.Conflict when the claim no longer holds.
	Enqueue(ctx context.Context, c FeedClaim, to FeedPosition, rows []notifykit.NewDelivery, states map[notifykit.CoalesceKey]cn.CoalesceState) (FeedClaim, error)
	// HeldWindows lists up to limit coalescing windows holding outcomes
	// back, with their rule's project.
	HeldWindows(ctx context.Context, limit int) ([]CoalesceWindow, error)
	// AddDeliveries writes rows without a cursor (sendNotify).
	AddDeliveries(ctx context.Context, rows []notifykit.NewDelivery) error
	// Claim takes up to limit pending rows due by nowMs that nobody holds
	// a live claim on (FOR UPDATE SKIP LOCKED), for owner until lease.
	Claim(ctx context.Context, owner string, lease time.Duration, nowMs int64, limit int) ([]DeliveryClaim, error)
	// ClaimRow claims one pending row by id whatever its due time (a
	// "send test"); ok is false when another replica holds it or it is
	// not pending.
	ClaimRow(ctx context.Context, owner string, lease time.Duration, id int64) (DeliveryClaim, bool, error)
	// ChannelSettings opens a channel's sealed settings.
	ChannelSettings(ctx context.Context, id string) (notifykit.Channel, channel.Settings, error)
	// Record writes an attempt and the row's new state under the claim
	// and releases it; errs.Conflict (nothing written) when it no longer
	// holds.
	Record(ctx context.Context, c DeliveryClaim, o notifykit.Outcome) error
	// HeldDue lists held rows whose window ended by nowMs.
	HeldDue(ctx context.Context, nowMs int64, limit int) ([]notifykit.Delivery, error)
	// Digest writes the digest row and marks the held rows digested.
	Digest(ctx context.Context, digest notifykit.NewDelivery, held []int64) error
	// NextDueMs is the earliest next_at_ms of a pending or held row.
	NextDueMs(ctx context.Context) (int64, bool, error)
	// GetDelivery reads one row with its log.
	GetDelivery(ctx context.Context, id int64) (notifykit.Delivery, error)
}

// CoalesceWindow is one stored coalescing window and its rule's project.
type CoalesceWindow struct {
	ProjectID string
	Key       notifykit.CoalesceKey
	State     cn.CoalesceState
}
