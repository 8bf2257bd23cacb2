package httpapi

import "github.com/ql3/ql3/notifykit"

// The notification routes' wire types are notifykit's, shared with
// ql3-control's admin API (one shape on both binaries).
type (
	NotifyHeader         = notifykit.NotifyHeader
	ChannelSettings      = notifykit.ChannelSettings
	CreateChannelRequest = notifykit.CreateChannelRequest
	PatchChannelRequest  = notifykit.PatchChannelRequest
	NotifyChannel        = notifykit.NotifyChannel
	QuietHoursBody       = notifykit.QuietHoursBody
	CoalesceBody         = notifykit.CoalesceBody
	RuleRequest          = notifykit.RuleRequest
	NotifyRule           = notifykit.NotifyRule
	NotifyAttempt        = notifykit.NotifyAttempt
	NotifyDelivery       = notifykit.NotifyDelivery
	DeliveryList         = notifykit.DeliveryList
	SendNotifyRequest    = notifykit.SendNotifyRequest
	SendNotifyResponse   = notifykit.SendNotifyResponse
)

var (
	channelView  = notifykit.ChannelView
	ruleView     = notifykit.RuleView
	deliveryView = notifykit.DeliveryView
)
