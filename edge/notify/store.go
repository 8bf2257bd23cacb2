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

// Outbox statuses.
const (
	StatusPending   = "pending"
	StatusHeld      = "held"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
	StatusDropped   = "dropped"
	StatusDigested  = "digested"
)

// Kinds of outbox rows beyond core/notify's outcome kinds.
const (
	KindTest    = "test"    // a "send test" of a channel
	KindSummary = "summary" // the end of a coalescing window
	KindDigest  = "digest"  // messages held by quiet hours, sent together
)

// Channel is a channel as the API shows it: never a credential.
type Channel struct {
	ID          string
	Name        string
	Kind        string
	Enabled     bool
	Public      PublicSettings
	CreatedAtMs int64
	UpdatedAtMs int64
}

// PublicSettings are the non-secret parts of a channel's settings; which
// credentials are set is all that is said about them.
type PublicSettings struct {
	Server      string   `json:"server,omitempty"` // scheme://host only: a webhook URL may carry a token
	ChatID      string   `json:"chatId,omitempty"`
	Topic       string   `json:"topic,omitempty"`
	Proxy       string   `json:"proxy,omitempty"` // scheme://host, no user info
	HeaderNames []string `json:"headerNames,omitempty"`
	SMTPHost    string   `json:"smtpHost,omitempty"`
	SMTPPort    int      `json:"smtpPort,omitempty"`
	From        string   `json:"from,omitempty"`
	To          []string `json:"to,omitempty"`
	SecretsSet  []string `json:"secretsSet,omitempty"` // e.g. ["token", "secret"]
}

// ChannelInput creates a channel.
type ChannelInput struct {
	Name     string
	Enabled  bool
	Settings channel.Settings
}

// ChannelPatch changes a channel; nil fields stay. In Settings, empty
// credential fields (token, secret, password), an empty server and no
// headers keep the stored ones: they are write-only and never read back.
type ChannelPatch struct {
	Name     *string
	Enabled  *bool
	Settings *channel.Settings
}

// Rule is a stored rule.
type Rule struct {
	cn.Rule
	Name        string
	CreatedAtMs int64
	UpdatedAtMs int64
}

// RuleInput creates or replaces a rule (ID is ignored).
type RuleInput struct {
	Name string
	Rule cn.Rule
}

// NewDelivery is one outbox row to write.
type NewDelivery struct {
	Key       string
	RuleID    string
	ChannelID string
	RunID     string
	TaskID    string
	Kind      string
	Title     string
	Content   string
	Status    string // pending, held or dropped
	NextAtMs  int64
	GiveUpMs  int64
	CreatedMs int64
}

// Attempt is one try of a delivery: the delivery log.
type Attempt struct {
	N          int
	AtMs       int64
	StatusCode int
	Error      string
	LatencyMs  int64
}

// Delivery is an outbox row with its log.
type Delivery struct {
	ID           int64
	Key          string
	RuleID       string
	ChannelID    string
	RunID        string
	TaskID       string
	Kind         string
	Title        string
	Content      string
	Status       string
	CreatedAtMs  int64
	NextAtMs     int64
	GiveUpAtMs   int64
	Attempts     int
	LastStatus   int
	LastError    string
	FinishedAtMs int64
	DigestID     int64
	AttemptLog   []Attempt
}

// DeliveryFilter selects deliveries, newest first.
type DeliveryFilter struct {
	Status    string
	ChannelID string
	RunID     string
	BeforeID  int64 // keyset: rows with id < BeforeID; 0 = from the newest
	Limit     int   // 1..MaxPage
}

// MaxPage bounds every list of this package.
const MaxPage = 200

// CoalesceKey names one coalescing window.
type CoalesceKey struct {
	RuleID string
	TaskID string
}

// Outcome of one delivery attempt, recorded with the attempt.
type Outcome struct {
	Attempt Attempt
	// Status: StatusDelivered, StatusPending (retry at NextAtMs) or
	// StatusFailed (given up; the attempt's error is the reason).
	Status   string
	NextAtMs int64
}

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

// Audit actions.
const (
	AuditChannelCreate = "notify.channel.create"
	AuditChannelUpdate = "notify.channel.update"
	AuditChannelDelete = "notify.channel.delete"
	AuditChannelTest   = "notify.channel.test"
	AuditRuleCreate    = "notify.rule.create"
	AuditRuleUpdate    = "notify.rule.update"
	AuditRuleDelete    = "notify.rule.delete"
)
