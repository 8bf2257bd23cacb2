package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
)

var _ edge.SubscriptionStore = (*Store)(nil)

const subColumns = `id, name, slug, kind, url, branch, credential, credential_kind, filter, schedule,
    auto_add, auto_remove, remove_mode, default_cron, proxy, time_zone, enabled, task_id, last_commit,
    last_pull_at_ms, created_at_ms, updated_at_ms`

func scanSub(sc scanner) (edge.Subscription, error) {
	var s edge.Subscription
	var filter string
	var autoAdd, autoRemove, enabled int
	err := sc.Scan(&s.ID, &s.Name, &s.Slug, &s.Kind, &s.URL, &s.Branch, &s.Credential, &s.CredentialKind, &filter,
		&s.Schedule, &autoAdd, &autoRemove, &s.RemoveMode, &s.DefaultCron, &s.Proxy, &s.TimeZone, &enabled, &s.TaskID,
		&s.LastCommit, &s.LastPullAtMs, &s.CreatedAtMs, &s.UpdatedAtMs)
	if err != nil {
		return s, err
	}
	s.AutoAdd, s.AutoRemove, s.Enabled = autoAdd == 1, autoRemove == 1, enabled == 1
	if err := json.Unmarshal([]byte(filter), &s.Filter); err != nil {
		return s, fmt.Errorf("subscription %s: filter: %w", s.ID, err)
	}
	return s, nil
}

func filterJSON(f subplan.Filter) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func subDetail(in edge.NewSubscription) string {
	return fmt.Sprintf("kind=%s url=%s branch=%s credential=%s", in.Kind, in.URL, in.Branch, in.Credential)
}

// CreateSubscription implements edge.SubscriptionStore.
func (s *Store) CreateSubscription(ctx context.Context, in edge.NewSubscription, actor string) (edge.Subscription, error) {
	v, err := edge.CheckSubscription(in)
	if err != nil {
		return edge.Subscription{}, err
	}
	now := s.clock.Now().UnixMilli()
	id := newID()
	err = s.write(ctx, func(tx *wtx, _ *signals) error {
		return createSubscriptionTx(ctx, tx, id, v, now, actor)
	})
	if err != nil {
		return edge.Subscription{}, err
	}
	return s.GetSubscription(ctx, id)
}

// createSubscriptionTx writes a checked subscription and its audit line
// inside tx (CreateSubscription; the QingLong import, ADR 0056).
func createSubscriptionTx(ctx context.Context, tx *wtx, id string, v edge.NewSubscription, now int64, actor string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM subscriptions`).Scan(&n); err != nil {
		return err
	}
	if n >= edge.MaxSubscriptions {
		return errs.TooLargef("subscriptions", "at most %d subscriptions", edge.MaxSubscriptions)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO subscriptions (id, name, slug, kind, url, branch, credential,
            credential_kind, filter, schedule, auto_add, auto_remove, remove_mode, default_cron, proxy, time_zone, enabled,
            created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, v.Name, v.Slug, v.Kind, v.URL, v.Branch, v.Credential, v.CredentialKind, filterJSON(v.Filter), v.Schedule,
		boolInt(v.AutoAdd), boolInt(v.AutoRemove), v.RemoveMode, v.DefaultCron, v.Proxy, v.TimeZone, boolInt(v.Enabled),
		now, now); err != nil {
		return subConflict(err, v)
	}
	return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditSubCreate, Target: id, Actor: actor, Detail: subDetail(v)})
}

func subConflict(err error, v edge.NewSubscription) error {
	if errs.Code(translate(err)) != errs.Conflict {
		return err
	}
	return errs.E(errs.Conflict, "name", "the name %q or the folder %q is in use", v.Name, v.Slug)
}

// UpdateSubscription implements edge.SubscriptionStore (a full
// replacement; the folder of a subscription that has tasks stays).
func (s *Store) UpdateSubscription(ctx context.Context, id string, in edge.NewSubscription, actor string) (edge.Subscription, error) {
	v, err := edge.CheckSubscription(in)
	if err != nil {
		return edge.Subscription{}, err
	}
	now := s.clock.Now().UnixMilli()
	err = s.write(ctx, func(tx *wtx, _ *signals) error {
		cur, err := getSub(ctx, tx, id)
		if err != nil {
			return err
		}
		if in.Slug == "" {
			v.Slug = cur.Slug
		}
		if v.Slug != cur.Slug {
			return errs.Invalidf("slug", "the folder of a subscription cannot change (it is %q)", cur.Slug)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET name = ?, kind = ?, url = ?, branch = ?, credential = ?,
            credential_kind = ?, filter = ?, schedule = ?, auto_add = ?, auto_remove = ?, remove_mode = ?, default_cron = ?,
            proxy = ?, time_zone = ?, enabled = ?, updated_at_ms = ? WHERE id = ?`,
			v.Name, v.Kind, v.URL, v.Branch, v.Credential, v.CredentialKind, filterJSON(v.Filter), v.Schedule,
			boolInt(v.AutoAdd), boolInt(v.AutoRemove), v.RemoveMode, v.DefaultCron, v.Proxy, v.TimeZone, boolInt(v.Enabled),
			now, id); err != nil {
			return subConflict(err, v)
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditSubUpdate, Target: id, Actor: actor, Detail: subDetail(v)})
	})
	if err != nil {
		return edge.Subscription{}, err
	}
	return s.GetSubscription(ctx, id)
}

// DeleteSubscription implements edge.SubscriptionStore: the record and its
// task links go; the tasks it made stay (now plain tasks), and so does its
// system task's history (the caller deletes the system task).
func (s *Store) DeleteSubscription(ctx context.Context, id, actor string) error {
	now := s.clock.Now().UnixMilli()
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		cur, err := getSub(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM subscriptions WHERE id = ?`, id); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditSubDelete, Target: id, Actor: actor, Detail: cur.Name})
	})
}

func getSub(ctx context.Context, q queryer, id string) (edge.Subscription, error) {
	sub, err := scanSub(q.QueryRowContext(ctx, `SELECT `+subColumns+` FROM subscriptions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sub, errs.NotFoundf("subscription %s not found", id)
	}
	return sub, translate(err)
}

// GetSubscription implements edge.SubscriptionStore.
func (s *Store) GetSubscription(ctx context.Context, id string) (edge.Subscription, error) {
	return getSub(ctx, s.reader, id)
}

// ListSubscriptions implements edge.SubscriptionStore (by name, bounded by
// edge.MaxSubscriptions).
func (s *Store) ListSubscriptions(ctx context.Context) ([]edge.Subscription, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+subColumns+` FROM subscriptions ORDER BY name LIMIT ?`, edge.MaxSubscriptions)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []edge.Subscription{}
	for rows.Next() {
		sub, err := scanSub(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, sub)
	}
	return out, translate(rows.Err())
}

// SetSubscriptionTask implements edge.SubscriptionStore.
func (s *Store) SetSubscriptionTask(ctx context.Context, id, taskID string) error {
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `UPDATE subscriptions SET task_id = ? WHERE id = ?`, taskID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("subscription %s not found", id)
		}
		return nil
	})
}
