package edge

import (
	"context"

	"github.com/ql3/ql3/core/errs"
)

// Feed bounds: one Events call returns at most MaxEventBatch events; a
// consumer name is 1..MaxConsumerName bytes of [A-Za-z0-9._-].
const (
	MaxEventBatch   = 500
	MaxConsumerName = 64
)

// FeedEvent is one run event at its place in the feed.
type FeedEvent struct {
	// Position is the event's global place in commit order: strictly
	// increasing, never reused (gaps appear where retention pruned runs).
	Position int64
	RunEvent
}

// EventFeed is the durable, ordered stream of every run's events for
// in-process consumers (notifications, webhooks, reports) that follow them
// without touching the code that writes them (ADR 0037). A consumer keeps
// its cursor under a name and resumes from it after a restart:
//
//	pos, _ := feed.ConsumerPosition(ctx, "notify")
//	for {
//		woken := feed.EventsAppended() // before reading: nothing is missed
//		evs, err := feed.Events(ctx, pos, 100)
//		… handle evs, then AdvanceConsumer(ctx, "notify", pos, last) …
//		if len(evs) == 0 { <-woken }
//	}
type EventFeed interface {
	// Events returns up to limit (1..MaxEventBatch) events with Position >
	// after, in Position order. Every event committed before the call with
	// a Position > after is either returned or after the last one returned.
	Events(ctx context.Context, after int64, limit int) ([]FeedEvent, error)
	// EventsAppended returns a channel that is closed after the next
	// commit that appends events. Any number of consumers may wait on it;
	// take it before calling Events, so an append between the read and the
	// wait still wakes the consumer.
	EventsAppended() <-chan struct{}
	// ConsumerPosition is the stored cursor of a named consumer (0 before
	// its first AdvanceConsumer).
	ConsumerPosition(ctx context.Context, consumer string) (int64, error)
	// AdvanceConsumer moves a consumer's cursor from `from` to `to`
	// (to ≥ from), durably; errs.Conflict when the stored cursor is not
	// `from` (another consumer under the same name moved it).
	AdvanceConsumer(ctx context.Context, consumer string, from, to int64) error
}

// CheckConsumerName validates a feed consumer's name: 1..MaxConsumerName
// bytes of letters, digits, '.', '_' and '-'.
func CheckConsumerName(name string) error {
	if name == "" || len(name) > MaxConsumerName {
		return errs.Invalidf("consumer", "must be 1..%d bytes, got %d", MaxConsumerName, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errs.Invalidf("consumer", "may hold only letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}
