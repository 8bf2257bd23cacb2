package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
)

// broadcast wakes every waiter of one generation: EventsAppended hands out
// the current channel, and each commit that appended events closes it and
// starts the next.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) signal() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// EventsAppended implements edge.EventFeed.
func (s *Store) EventsAppended() <-chan struct{} { return s.appended.wait() }

// Events implements edge.EventFeed.
func (s *Store) Events(ctx context.Context, after int64, limit int) ([]edge.FeedEvent, error) {
	if limit < 1 || limit > edge.MaxEventBatch {
		return nil, errs.Invalidf("limit", "must be 1..%d, got %d", edge.MaxEventBatch, limit)
	}
	if after < 0 {
		return nil, errs.Invalidf("after", "must not be negative, got %d", after)
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT f.position, e.run_id, e.seq, e.type, e.at_ms, e.payload
        FROM run_event_feed f JOIN run_events e ON e.run_id = f.run_id AND e.seq = f.seq
        WHERE f.position > ? ORDER BY f.position LIMIT ?`, after, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make([]edge.FeedEvent, 0, min(limit, 64))
	for rows.Next() {
		var (
			e       edge.FeedEvent
			typ, pl string
		)
		if err := rows.Scan(&e.Position, &e.RunID, &e.Seq, &typ, &e.AtMs, &pl); err != nil {
			return nil, translate(err)
		}
		e.Type = run.EventType(typ)
		if e.Payload, err = run.DecodePayload([]byte(pl)); err != nil {
			return nil, errs.E(errs.Internal, "", "stored payload of event %d of run %s: %v", e.Seq, e.RunID, err)
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

// ConsumerPosition implements edge.EventFeed.
func (s *Store) ConsumerPosition(ctx context.Context, consumer string) (int64, error) {
	if err := edge.CheckConsumerName(consumer); err != nil {
		return 0, err
	}
	var pos int64
	err := s.reader.QueryRowContext(ctx, `SELECT position FROM event_consumers WHERE name = ?`, consumer).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return pos, translate(err)
}

// AdvanceConsumer implements edge.EventFeed.
func (s *Store) AdvanceConsumer(ctx context.Context, consumer string, from, to int64) error {
	if err := checkConsumerMove(consumer, from, to); err != nil {
		return err
	}
	now := s.clock.Now().UnixMilli()
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		return moveConsumer(ctx, tx, consumer, from, to, now)
	})
}

// checkConsumerMove validates a cursor move from → to of a named consumer.
func checkConsumerMove(consumer string, from, to int64) error {
	if err := edge.CheckConsumerName(consumer); err != nil {
		return err
	}
	if from < 0 || to < from {
		return errs.Invalidf("to", "must be >= from (%d) >= 0, got %d", from, to)
	}
	return nil
}

// moveConsumer compare-and-sets a consumer's cursor from → to inside tx
// (from 0: the first move creates the row); a cursor that moved meanwhile
// is a conflict. AdvanceConsumer and the notification outbox share it.
func moveConsumer(ctx context.Context, tx *wtx, consumer string, from, to, now int64) error {
	var res sql.Result
	var err error
	if from == 0 {
		res, err = tx.ExecContext(ctx, `INSERT INTO event_consumers (name, position, updated_at_ms) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at_ms = excluded.updated_at_ms
                WHERE event_consumers.position = 0`, consumer, to, now)
	} else {
		res, err = tx.ExecContext(ctx, `UPDATE event_consumers SET position = ?, updated_at_ms = ? WHERE name = ? AND position = ?`,
			to, now, consumer, from)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errs.E(errs.Conflict, "from", "consumer %s is not at position %d", consumer, from)
	}
	return nil
}
