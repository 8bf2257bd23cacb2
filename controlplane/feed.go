package controlplane

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// The run-event feed: the seam through which consumers that follow what
// happens to Runs (notifications, webhooks, subscription reports) read the
// durable run events, without touching the code that writes them. Nothing
// in the control plane consumes it yet.

// FeedPosition is a place in the feed. Events are delivered in (Xid, ID)
// order: the writing transaction's id (PostgreSQL xid8), then the event's
// insertion counter. A plain insertion counter is not enough on a server
// with concurrent writers: a transaction that took a lower counter can
// commit after a higher one was read, and a cursor past it would skip it.
// The zero position is before every event.
type FeedPosition struct {
	Xid uint64
	ID  int64
}

// Less reports whether p comes before q.
func (p FeedPosition) Less(q FeedPosition) bool {
	return p.Xid < q.Xid || p.Xid == q.Xid && p.ID < q.ID
}

// FeedEvent is one run event as the feed delivers it.
type FeedEvent struct {
	Position  FeedPosition
	RunID     string
	ProjectID string
	Seq       int64 // the event's number within its Run (1, 2, …)
	Type      string
	Attempt   int // 0 when the event names no Attempt
	AtMs      int64
	Payload   json.RawMessage
}

// MaxFeedLimit bounds one Events call.
const MaxFeedLimit = 256

// RunEventFeed reads the durable, ordered run events (runtime role).
type RunEventFeed interface {
	// Events returns up to limit (1..MaxFeedLimit) events after after, in
	// feed order, from transactions that have ended: an event a running
	// transaction will commit later is returned later, never skipped.
	Events(ctx context.Context, after FeedPosition, limit int) ([]FeedEvent, error)
	// Wait is the wake-up: it returns nil as soon as the feed holds an
	// event after after, checking now and then once per tick (a poll on
	// the feed's index, no trigger on the write paths), or ctx's error.
	Wait(ctx context.Context, after FeedPosition, tick <-chan time.Time) error
}

// FeedClaim is a named consumer's claim on its cursor: a fenced lease in
// database time, as a scheduler's claim on a schedule row. Only the holder
// of a live claim may advance the cursor, so N replicas running the same
// consumer never share it by accident.
type FeedClaim struct {
	Consumer    string
	Owner       string
	Token       uuid.UUID
	Version     int64
	ExpiresAtMs int64
	// Cursor is the last position the consumer stored: read after it.
	Cursor FeedPosition
}

// FeedConsumers claims and advances named consumers' cursors (runtime
// role). Consumer names are 1..64 of a-z 0-9 . _ : - (starting with a
// letter or digit); owners are a replica's identity, 1..128 bytes.
type FeedConsumers interface {
	// Claim takes the consumer for owner until lease from now (database
	// time) when nobody holds a live claim on it, or renews owner's own
	// live claim (same token and version). ok is false, and nothing
	// changes, while another owner's claim is live.
	Claim(ctx context.Context, consumer, owner string, lease time.Duration) (c FeedClaim, ok bool, err error)
	// Advance stores to as the cursor under the claim's full fence
	// (owner, token, version, unexpired by database time); a cursor never
	// moves back. A claim that no longer holds is an errs.Conflict and
	// changes nothing.
	Advance(ctx context.Context, c FeedClaim, to FeedPosition) (FeedClaim, error)
}
