package postgres

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

// Feed is the run-event feed and its consumers' claims on a runtime-role
// pool (controlplane.RunEventFeed and FeedConsumers; migration 0012).
type Feed struct{ db DB }

// NewFeed returns the feed over a ql3_runtime pool.
func NewFeed(db DB) *Feed { return &Feed{db: db} }

// feedHorizon keeps a read to events of transactions below the oldest one
// still running: those can no longer change, so nothing can later appear
// before a position read now.
const feedHorizon = `feed_xid < pg_snapshot_xmin(pg_current_snapshot())`

// sqlFeedEvents names the xid's text output position_xid: a bare ORDER BY
// feed_xid would bind to an output column called feed_xid before the table's
// column, and sort the xids as text ("1002" < "990") while WHERE compares
// them as numbers, so a page read across a decimal digit boundary handed
// out a cursor past events it never returned (issue 23).
const sqlFeedEvents = `SELECT feed_xid::text AS position_xid, feed_id, run_id::text, project_id::text, sequence, type,
	coalesce(attempt, 0), created_at_ms, payload::text
FROM ql3.run_events
WHERE (feed_xid, feed_id) > ($1::text::xid8, $2::bigint) AND ` + feedHorizon + `
ORDER BY run_events.feed_xid, run_events.feed_id
LIMIT $3`

// Events implements controlplane.RunEventFeed.
func (f *Feed) Events(ctx context.Context, after controlplane.FeedPosition, limit int) ([]controlplane.FeedEvent, error) {
	if limit < 1 || limit > controlplane.MaxFeedLimit {
		return nil, errs.Invalidf("limit", "must be 1..%d, got %d", controlplane.MaxFeedLimit, limit)
	}
	rows, err := f.db.Query(ctx, sqlFeedEvents, strconv.FormatUint(after.Xid, 10), after.ID, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.FeedEvent, error) {
		var e controlplane.FeedEvent
		var xid, payload string
		if err := r.Scan(&xid, &e.Position.ID, &e.RunID, &e.ProjectID, &e.Seq, &e.Type, &e.Attempt, &e.AtMs, &payload); err != nil {
			return e, err
		}
		var err error
		if e.Position.Xid, err = strconv.ParseUint(xid, 10, 64); err != nil {
			return e, errs.E(errs.Internal, "", "feed xid %q: %v", xid, err)
		}
		e.Payload = []byte(payload)
		return e, nil
	})
	if err != nil {
		return nil, translateDriver(err)
	}
	return out, nil
}

const sqlFeedAny = `SELECT EXISTS (SELECT 1 FROM ql3.run_events
WHERE (feed_xid, feed_id) > ($1::text::xid8, $2::bigint) AND ` + feedHorizon + `)`

// Wait implements controlplane.RunEventFeed: one indexed probe now and one
// per tick.
func (f *Feed) Wait(ctx context.Context, after controlplane.FeedPosition, tick <-chan time.Time) error {
	for {
		var found bool
		if err := f.db.QueryRow(ctx, sqlFeedAny, strconv.FormatUint(after.Xid, 10), after.ID).Scan(&found); err != nil {
			return Translate(err)
		}
		if found {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
		}
	}
}

var feedConsumerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,63}$`)

// sqlFeedClaim takes a consumer that has no live claim, or renews the
// owner's own live claim; a live claim of another owner makes the upsert's
// WHERE false and returns no row.
const sqlFeedClaim = `WITH n AS MATERIALIZED (SELECT ` + dbNowMs + ` AS ms)
INSERT INTO ql3.run_event_consumers AS c (consumer, claim_owner, claim_token, claim_version, claim_expires_at_ms, updated_at_ms)
SELECT $1::text, $2::text, $3::uuid, 1, n.ms + $4::bigint, n.ms FROM n
ON CONFLICT (consumer) DO UPDATE SET
	claim_token = CASE WHEN c.claim_owner = excluded.claim_owner AND c.claim_expires_at_ms > excluded.updated_at_ms
		THEN c.claim_token ELSE excluded.claim_token END,
	claim_version = CASE WHEN c.claim_owner = excluded.claim_owner AND c.claim_expires_at_ms > excluded.updated_at_ms
		THEN c.claim_version ELSE c.claim_version + 1 END,
	claim_owner = excluded.claim_owner,
	claim_expires_at_ms = excluded.claim_expires_at_ms,
	updated_at_ms = excluded.updated_at_ms
WHERE c.claim_owner IS NULL OR c.claim_expires_at_ms <= excluded.updated_at_ms OR c.claim_owner = excluded.claim_owner
RETURNING claim_token, claim_version, claim_expires_at_ms, cursor_xid::text, cursor_id`

// Claim implements controlplane.FeedConsumers.
func (f *Feed) Claim(ctx context.Context, consumer, owner string, lease time.Duration) (controlplane.FeedClaim, bool, error) {
	c := controlplane.FeedClaim{Consumer: consumer, Owner: owner}
	switch {
	case !feedConsumerName.MatchString(consumer):
		return c, false, errs.Invalidf("consumer", "must be 1..64 of a-z 0-9 . _ : - starting with a letter or digit, got %.80q", consumer)
	case owner == "" || len(owner) > controlplane.MaxClaimOwnerBytes:
		return c, false, errs.Invalidf("owner", "must be 1..%d bytes, got %d", controlplane.MaxClaimOwnerBytes, len(owner))
	case lease < controlplane.MinClaimLease || lease > controlplane.MaxClaimLease || lease%time.Millisecond != 0:
		return c, false, errs.Invalidf("lease", "must be whole milliseconds in %v..%v, got %v", controlplane.MinClaimLease, controlplane.MaxClaimLease, lease)
	}
	token, err := uuid.NewRandom()
	if err != nil {
		return c, false, errs.E(errs.Internal, "", "claim token: %v", err)
	}
	var xid string
	err = f.db.QueryRow(ctx, sqlFeedClaim, consumer, owner, token, lease.Milliseconds()).
		Scan(&c.Token, &c.Version, &c.ExpiresAtMs, &xid, &c.Cursor.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.FeedClaim{Consumer: consumer, Owner: owner}, false, nil
	}
	if err != nil {
		return c, false, Translate(err)
	}
	if c.Cursor.Xid, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return c, false, errs.E(errs.Internal, "", "cursor xid %q: %v", xid, err)
	}
	return c, true, nil
}

const sqlFeedAdvance = `UPDATE ql3.run_event_consumers SET cursor_xid = $5::text::xid8, cursor_id = $6::bigint, updated_at_ms = ` + dbNowMs + `
WHERE consumer = $1::text AND claim_owner = $2::text AND claim_token = $3::uuid AND claim_version = $4::bigint
	AND claim_expires_at_ms > ` + dbNowMs + ` AND (cursor_xid, cursor_id) <= ($5::text::xid8, $6::bigint)
RETURNING claim_expires_at_ms`

// Advance implements controlplane.FeedConsumers.
func (f *Feed) Advance(ctx context.Context, c controlplane.FeedClaim, to controlplane.FeedPosition) (controlplane.FeedClaim, error) {
	if to.ID < 0 {
		return c, errs.Invalidf("to", "position id must not be negative, got %d", to.ID)
	}
	err := f.db.QueryRow(ctx, sqlFeedAdvance, c.Consumer, c.Owner, c.Token, c.Version, strconv.FormatUint(to.Xid, 10), to.ID).
		Scan(&c.ExpiresAtMs)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, errs.E(errs.Conflict, "claim", "consumer %s: the claim no longer holds (expired or taken over) or the cursor would move back", c.Consumer)
	}
	if err != nil {
		return c, Translate(err)
	}
	c.Cursor = to
	return c, nil
}
