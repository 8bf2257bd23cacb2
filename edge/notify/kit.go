package notify

import (
	"github.com/ql3/ql3/notifykit"
	"github.com/ql3/ql3/notifykit/sender"
)

// The outbox's records, settings and sender are notifykit's (shared with
// the control plane); these names keep this package's API.
type (
	Channel        = notifykit.Channel
	PublicSettings = notifykit.PublicSettings
	ChannelInput   = notifykit.ChannelInput
	ChannelPatch   = notifykit.ChannelPatch
	Rule           = notifykit.Rule
	RuleInput      = notifykit.RuleInput
	NewDelivery    = notifykit.NewDelivery
	Attempt        = notifykit.Attempt
	Delivery       = notifykit.Delivery
	DeliveryFilter = notifykit.DeliveryFilter
	CoalesceKey    = notifykit.CoalesceKey
	Outcome        = notifykit.Outcome
	Sender         = sender.Sender
	SendError      = sender.SendError
)

// Statuses, kinds, limits and audit actions.
const (
	StatusPending   = notifykit.StatusPending
	StatusHeld      = notifykit.StatusHeld
	StatusDelivered = notifykit.StatusDelivered
	StatusFailed    = notifykit.StatusFailed
	StatusDropped   = notifykit.StatusDropped
	StatusDigested  = notifykit.StatusDigested

	KindTest    = notifykit.KindTest
	KindSummary = notifykit.KindSummary
	KindDigest  = notifykit.KindDigest

	MaxPage               = notifykit.MaxPage
	DefaultRequestTimeout = sender.DefaultRequestTimeout
	ScriptCallsPerWindow  = notifykit.ScriptCallsPerWindow
	ScriptWindowMs        = notifykit.ScriptWindowMs

	AuditChannelCreate = notifykit.AuditChannelCreate
	AuditChannelUpdate = notifykit.AuditChannelUpdate
	AuditChannelDelete = notifykit.AuditChannelDelete
	AuditChannelTest   = notifykit.AuditChannelTest
	AuditRuleCreate    = notifykit.AuditRuleCreate
	AuditRuleUpdate    = notifykit.AuditRuleUpdate
	AuditRuleDelete    = notifykit.AuditRuleDelete
)

// Settings helpers.
var (
	EncodeSettings = notifykit.EncodeSettings
	DecodeSettings = notifykit.DecodeSettings
	CheckSettings  = notifykit.CheckSettings
	Merge          = notifykit.Merge
	Public         = notifykit.Public
)

// Stored forms shared with the control plane.
const SealName = notifykit.SealName

var (
	EncodeRule = notifykit.EncodeRule
	DecodeRule = notifykit.DecodeRule
)
