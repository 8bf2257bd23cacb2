// Package notifykit is what both binaries share of notification delivery
// (ADR 0046, ADR 0053): the outbox's records, a channel's sealed settings
// and their public view, the Policy that turns run outcomes into outbox
// rows and an attempt into its recorded outcome, and the API's wire types.
// Subpackage sender makes one attempt through one channel (HTTP providers
// and SMTP); this package links no network client, so the control plane's
// domain package can use its records.
// The rules and providers are core/notify's; each binary's store and loop
// (edge/notify on SQLite, the control plane's on PostgreSQL) call these.
package notifykit

import (
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
)

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
	ProjectID string // the cluster's project ("" on the edge)
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
	ProjectID    string // the cluster's project ("" on the edge)
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
