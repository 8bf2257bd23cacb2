package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/edge"
	nt "github.com/ql3/ql3/edge/notify"
)

const insertDelivery = `INSERT INTO notify_outbox (idempotency_key, rule_id, channel_id, run_id, task_id, kind, title, content, status,
    created_at_ms, next_at_ms, give_up_at_ms, finished_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`

func addDelivery(ctx context.Context, tx *wtx, d nt.NewDelivery) (int64, error) {
	var finished int64
	switch d.Status {
	case nt.StatusPending, nt.StatusHeld:
	case nt.StatusDropped:
		finished = d.CreatedMs
	default:
		return 0, errs.Invalidf("status", "a new delivery is pending, held or dropped, got %q", d.Status)
	}
	res, err := tx.ExecContext(ctx, insertDelivery, d.Key, d.RuleID, d.ChannelID, d.RunID, d.TaskID, d.Kind,
		truncateUTF8(d.Title, 256), truncateUTF8(d.Content, 16384), d.Status, d.CreatedMs, d.NextAtMs, d.GiveUpMs, finished)
	if err != nil {
		return 0, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, nil // the key exists: at-least-once derivation wrote it already
	}
	return res.LastInsertId()
}

func putCoalesce(ctx context.Context, tx *wtx, states map[nt.CoalesceKey]cn.CoalesceState) error {
	for k, st := range states {
		if _, err := tx.ExecContext(ctx, `INSERT INTO notify_coalesce (rule_id, task_id, window_start_ms, sent, held) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (rule_id, task_id) DO UPDATE SET window_start_ms = excluded.window_start_ms, sent = excluded.sent, held = excluded.held`,
			k.RuleID, k.TaskID, st.WindowStartMs, st.Sent, st.Held); err != nil {
			return err
		}
	}
	return nil
}

// Enqueue implements notify.Store: the rows, the coalescing windows and
// the cursor move commit together. NORMAL durability is enough: a commit
// lost to a power cut loses the rows and the cursor move together, and the
// next start derives the same rows (same idempotency keys) again.
func (s *Store) Enqueue(ctx context.Context, consumer string, from, to int64, rows []nt.NewDelivery, states map[nt.CoalesceKey]cn.CoalesceState) error {
	if err := checkConsumerMove(consumer, from, to); err != nil {
		return err
	}
	now := s.clock.Now().UnixMilli()
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		if err := moveConsumer(ctx, tx, consumer, from, to, now); err != nil {
			return err
		}
		for _, d := range rows {
			if _, err := addDelivery(ctx, tx, d); err != nil {
				return err
			}
		}
		return putCoalesce(ctx, tx, states)
	})
}

// AddDeliveries implements notify.Store.
func (s *Store) AddDeliveries(ctx context.Context, rows []nt.NewDelivery) ([]int64, error) {
	ids := make([]int64, 0, len(rows))
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		ids = ids[:0]
		for _, d := range rows {
			id, err := addDelivery(ctx, tx, d)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// CoalesceStates implements notify.Store.
func (s *Store) CoalesceStates(ctx context.Context) (map[nt.CoalesceKey]cn.CoalesceState, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT rule_id, task_id, window_start_ms, sent, held FROM notify_coalesce`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[nt.CoalesceKey]cn.CoalesceState{}
	for rows.Next() {
		var k nt.CoalesceKey
		var st cn.CoalesceState
		if err := rows.Scan(&k.RuleID, &k.TaskID, &st.WindowStartMs, &st.Sent, &st.Held); err != nil {
			return nil, translate(err)
		}
		out[k] = st
	}
	return out, translate(rows.Err())
}

const deliveryColumns = `id, idempotency_key, rule_id, channel_id, run_id, task_id, kind, title, content, status, created_at_ms,
    next_at_ms, give_up_at_ms, attempts, last_status, last_error, finished_at_ms, digest_id`

func scanDelivery(sc scanner) (nt.Delivery, error) {
	var d nt.Delivery
	err := sc.Scan(&d.ID, &d.Key, &d.RuleID, &d.ChannelID, &d.RunID, &d.TaskID, &d.Kind, &d.Title, &d.Content, &d.Status,
		&d.CreatedAtMs, &d.NextAtMs, &d.GiveUpAtMs, &d.Attempts, &d.LastStatus, &d.LastError, &d.FinishedAtMs, &d.DigestID)
	return d, err
}

func (s *Store) listDeliveries(ctx context.Context, where string, args ...any) ([]nt.Delivery, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+deliveryColumns+` FROM notify_outbox WHERE `+where, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []nt.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

func checkPage(limit int) error {
	if limit < 1 || limit > nt.MaxPage {
		return errs.Invalidf("limit", "must be 1..%d, got %d", nt.MaxPage, limit)
	}
	return nil
}

// Due implements notify.Store.
func (s *Store) Due(ctx context.Context, nowMs int64, limit int) ([]nt.Delivery, error) {
	if err := checkPage(limit); err != nil {
		return nil, err
	}
	return s.listDeliveries(ctx, `status = 'pending' AND next_at_ms <= ? ORDER BY next_at_ms, id LIMIT ?`, nowMs, limit)
}

// HeldDue implements notify.Store.
func (s *Store) HeldDue(ctx context.Context, nowMs int64, limit int) ([]nt.Delivery, error) {
	if err := checkPage(limit); err != nil {
		return nil, err
	}
	return s.listDeliveries(ctx, `status = 'held' AND next_at_ms <= ? ORDER BY rule_id, channel_id, id LIMIT ?`, nowMs, limit)
}

// Digest implements notify.Store (NORMAL: a lost commit leaves the held
// rows held, and the next step makes the same digest).
func (s *Store) Digest(ctx context.Context, digest nt.NewDelivery, held []int64) error {
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		id, err := addDelivery(ctx, tx, digest)
		if err != nil {
			return err
		}
		for _, h := range held {
			if _, err := tx.ExecContext(ctx, `UPDATE notify_outbox SET status = 'digested', digest_id = ?, finished_at_ms = ? WHERE id = ? AND status = 'held'`,
				id, digest.CreatedMs, h); err != nil {
				return err
			}
		}
		return nil
	})
}

// NextDueMs implements notify.Store.
func (s *Store) NextDueMs(ctx context.Context) (int64, bool, error) {
	var at sql.NullInt64
	err := s.reader.QueryRowContext(ctx, `SELECT min(next_at_ms) FROM notify_outbox WHERE status IN ('pending', 'held')`).Scan(&at)
	return at.Int64, at.Valid, translate(err)
}

// Record implements notify.Store: the attempt joins the log and the row
// moves on, in one transaction. NORMAL: a lost commit means one more
// attempt with the same idempotency key (at least once).
func (s *Store) Record(ctx context.Context, id int64, o nt.Outcome) error {
	a := o.Attempt
	a.Error = truncateUTF8(a.Error, 512)
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		var finished int64
		switch o.Status {
		case nt.StatusDelivered, nt.StatusFailed:
			finished = a.AtMs
		case nt.StatusPending:
		default:
			return errs.Invalidf("status", "an attempt ends delivered, pending or failed, got %q", o.Status)
		}
		res, err := tx.ExecContext(ctx, `UPDATE notify_outbox SET status = ?, attempts = ?, next_at_ms = ?, last_status = ?, last_error = ?, finished_at_ms = ?
WHERE id = ? AND status = 'pending'`, o.Status, a.N, o.NextAtMs, a.StatusCode, a.Error, finished, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(errs.Conflict, "id", "delivery %d is not pending", id)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO notify_attempts (outbox_id, n, at_ms, status_code, error, latency_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			id, a.N, a.AtMs, a.StatusCode, a.Error, a.LatencyMs)
		return err
	})
}

// ListDeliveries implements notify.Store (with each row's attempts).
func (s *Store) ListDeliveries(ctx context.Context, f nt.DeliveryFilter) ([]nt.Delivery, error) {
	if err := checkPage(f.Limit); err != nil {
		return nil, err
	}
	var (
		where []string
		args  []any
	)
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.ChannelID != "" {
		where, args = append(where, "channel_id = ?"), append(args, f.ChannelID)
	}
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, f.BeforeID)
	}
	if len(where) == 0 {
		where = []string{"1"}
	}
	out, err := s.listDeliveries(ctx, strings.Join(where, " AND ")+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].AttemptLog, err = s.attemptLog(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// maxAttemptLog bounds the attempts shown per delivery (the newest).
const maxAttemptLog = 50

func (s *Store) attemptLog(ctx context.Context, id int64) ([]nt.Attempt, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT n, at_ms, status_code, error, latency_ms FROM
    (SELECT * FROM notify_attempts WHERE outbox_id = ? ORDER BY n DESC LIMIT ?) ORDER BY n`, id, maxAttemptLog)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []nt.Attempt{}
	for rows.Next() {
		var a nt.Attempt
		if err := rows.Scan(&a.N, &a.AtMs, &a.StatusCode, &a.Error, &a.LatencyMs); err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// GetDelivery implements notify.Store.
func (s *Store) GetDelivery(ctx context.Context, id int64) (nt.Delivery, error) {
	d, err := scanDelivery(s.reader.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM notify_outbox WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nt.Delivery{}, errs.NotFoundf("delivery %d not found", id)
	}
	if err != nil {
		return nt.Delivery{}, translate(err)
	}
	d.AttemptLog, err = s.attemptLog(ctx, id)
	return d, err
}

// PruneDeliveries deletes up to limit (≤ edge.MaxPruneBatch) finished
// deliveries (delivered, failed, dropped, digested) that finished before
// beforeMs, with their attempts, oldest first, and returns how many.
func (s *Store) PruneDeliveries(ctx context.Context, beforeMs int64, limit int) (int, error) {
	if limit < 1 || limit > edge.MaxPruneBatch {
		return 0, errs.Invalidf("limit", "must be 1..%d, got %d", edge.MaxPruneBatch, limit)
	}
	var n int64
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM notify_outbox WHERE id IN (SELECT id FROM notify_outbox
    WHERE status IN ('delivered', 'failed', 'dropped', 'digested') AND finished_at_ms < ? ORDER BY id LIMIT ?)`, beforeMs, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
