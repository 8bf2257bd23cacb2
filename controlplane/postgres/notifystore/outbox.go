package notifystore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
)

// Outbox is controlplane.NotifyOutbox on a ql3_runtime pool.
type Outbox struct {
	db *pgxpool.Pool
	c  *envseal.Cipher
}

// NewOutbox returns the runtime port.
func NewOutbox(runtime *pgxpool.Pool, c *envseal.Cipher) *Outbox { return &Outbox{db: runtime, c: c} }

var _ controlplane.NotifyOutbox = (*Outbox)(nil)

// Subject implements controlplane.NotifyOutbox: the Run's task, its
// required labels, and whether the task's previous finished Run failed.
func (s *Outbox) Subject(ctx context.Context, runID string) (controlplane.NotifySubject, error) {
	var sub controlplane.NotifySubject
	if _, err := uuid.Parse(runID); err != nil {
		return sub, errs.NotFoundf("no run %s", runID)
	}
	err := s.db.QueryRow(ctx, `SELECT r.project_id::text, r.task_id::text, coalesce(t.name, ''), r.status,
	coalesce((SELECT array_agg(l.key || '=' || l.value ORDER BY l.key) FROM jsonb_each_text(er.placement->'required'->'labels') l), '{}'),
	coalesce((SELECT p.status IN ('failed', 'timed_out', 'lost') FROM ql3.runs p
		WHERE p.task_id = r.task_id AND p.run_id <> r.run_id AND p.created_at_ms <= r.created_at_ms
			AND p.status IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'lost')
		ORDER BY p.created_at_ms DESC, p.run_id DESC LIMIT 1), false)
FROM ql3.runs r LEFT JOIN ql3.tasks t ON t.task_id = r.task_id
LEFT JOIN ql3.execution_revisions er ON er.execution_revision_id = r.execution_revision_id
WHERE r.run_id = $1::uuid`, runID).Scan(&sub.ProjectID, &sub.TaskID, &sub.TaskName, &sub.Status, &sub.Labels, &sub.PrevFailed)
	return sub, postgres.Translate(err)
}

// TaskName implements controlplane.NotifyOutbox.
func (s *Outbox) TaskName(ctx context.Context, taskID string) (string, error) {
	if _, err := uuid.Parse(taskID); err != nil {
		return "", nil
	}
	var name string
	err := s.db.QueryRow(ctx, `SELECT coalesce((SELECT name FROM ql3.tasks WHERE task_id = $1::uuid), '')`, taskID).Scan(&name)
	return name, postgres.Translate(err)
}

// Rules implements controlplane.NotifyOutbox.
func (s *Outbox) Rules(ctx context.Context, project string) ([]notifykit.Rule, error) {
	return listRules(ctx, s.db, `SELECT `+ruleColumns+` FROM ql3.notify_rules WHERE project_id = $1::uuid AND enabled ORDER BY name LIMIT 256`, project)
}

// CoalesceStates implements controlplane.NotifyOutbox.
func (s *Outbox) CoalesceStates(ctx context.Context, keys []notifykit.CoalesceKey) (map[notifykit.CoalesceKey]cn.CoalesceState, error) {
	out := map[notifykit.CoalesceKey]cn.CoalesceState{}
	if len(keys) == 0 {
		return out, nil
	}
	rules, tasks := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		rules[i], tasks[i] = k.RuleID, k.TaskID
	}
	rows, err := s.db.Query(ctx, `SELECT c.rule_id, c.task_id, c.window_start_ms, c.sent, c.held FROM ql3.notify_coalesce c
JOIN unnest($1::text[], $2::text[]) AS k(rule_id, task_id) ON k.rule_id = c.rule_id AND k.task_id = c.task_id`, rules, tasks)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k notifykit.CoalesceKey
		var st cn.CoalesceState
		if err := rows.Scan(&k.RuleID, &k.TaskID, &st.WindowStartMs, &st.Sent, &st.Held); err != nil {
			return nil, postgres.Translate(err)
		}
		out[k] = st
	}
	return out, postgres.Translate(rows.Err())
}

// Enqueue implements controlplane.NotifyOutbox: the rows, the windows and
// the cursor move under the consumer's claim commit together.
func (s *Outbox) Enqueue(ctx context.Context, c controlplane.FeedClaim, to controlplane.FeedPosition, rows []notifykit.NewDelivery,
	states map[notifykit.CoalesceKey]cn.CoalesceState) (controlplane.FeedClaim, error) {
	err := postgres.InTx(ctx, s.db, postgres.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE ql3.run_event_consumers SET cursor_xid = $5::text::xid8, cursor_id = $6::bigint, updated_at_ms = `+nowMs+`
WHERE consumer = $1::text AND claim_owner = $2::text AND claim_token = $3::uuid AND claim_version = $4::bigint
	AND claim_expires_at_ms > `+nowMs+` AND (cursor_xid, cursor_id) <= ($5::text::xid8, $6::bigint)
RETURNING claim_expires_at_ms`, c.Consumer, c.Owner, c.Token, c.Version, strconv.FormatUint(to.Xid, 10), to.ID).Scan(&c.ExpiresAtMs)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.E(errs.Conflict, "claim", "consumer %s: the claim no longer holds (expired or taken over)", c.Consumer)
		}
		if err != nil {
			return err
		}
		for _, d := range rows {
			if _, err := insertRow(ctx, tx, d); err != nil {
				return err
			}
		}
		for k, st := range states {
			if _, err := tx.Exec(ctx, `INSERT INTO ql3.notify_coalesce (rule_id, task_id, window_start_ms, sent, held) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (rule_id, task_id) DO UPDATE SET window_start_ms = excluded.window_start_ms, sent = excluded.sent, held = excluded.held`,
				k.RuleID, k.TaskID, st.WindowStartMs, st.Sent, st.Held); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	c.Cursor = to
	return c, nil
}

// HeldWindows implements controlplane.NotifyOutbox.
func (s *Outbox) HeldWindows(ctx context.Context, limit int) ([]controlplane.CoalesceWindow, error) {
	rows, err := s.db.Query(ctx, `SELECT r.project_id::text, c.rule_id, c.task_id, c.window_start_ms, c.sent, c.held
FROM ql3.notify_coalesce c JOIN ql3.notify_rules r ON r.rule_id::text = c.rule_id
WHERE c.held > 0 ORDER BY c.window_start_ms LIMIT $1`, limit)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.CoalesceWindow, error) {
		var w controlplane.CoalesceWindow
		err := r.Scan(&w.ProjectID, &w.Key.RuleID, &w.Key.TaskID, &w.State.WindowStartMs, &w.State.Sent, &w.State.Held)
		return w, err
	})
	return out, postgres.Translate(err)
}

// AddDeliveries implements controlplane.NotifyOutbox.
func (s *Outbox) AddDeliveries(ctx context.Context, rows []notifykit.NewDelivery) error {
	return postgres.InTx(ctx, s.db, postgres.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		for _, d := range rows {
			if _, err := insertRow(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// claimSQL takes due pending rows nobody holds a live claim on; SKIP
// LOCKED keeps two replicas from waiting on (or taking) the same rows,
// and the expiry test lets a dead replica's rows go after its lease.
const claimSQL = `WITH n AS MATERIALIZED (SELECT ` + nowMs + ` AS ms), c AS (
	SELECT o.outbox_id FROM ql3.notify_outbox o, n
	WHERE o.status = 'pending' AND o.next_at_ms <= $3 AND (o.claim_expires_at_ms IS NULL OR o.claim_expires_at_ms <= n.ms) %s
	ORDER BY o.next_at_ms, o.outbox_id LIMIT $4 FOR UPDATE OF o SKIP LOCKED
)
UPDATE ql3.notify_outbox o SET claim_owner = $1, claim_token = gen_random_uuid(), claim_version = o.claim_version + 1,
	claim_expires_at_ms = n.ms + $2::bigint
FROM c, n WHERE o.outbox_id = c.outbox_id
RETURNING o.claim_token, o.claim_version, o.claim_expires_at_ms, ` + deliveryColumns

func (s *Outbox) claim(ctx context.Context, sql string, args ...any) ([]controlplane.DeliveryClaim, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.DeliveryClaim, error) {
		var c controlplane.DeliveryClaim
		var d notifykit.Delivery
		var tok uuid.UUID
		err := r.Scan(&tok, &c.Version, &c.ExpiresAtMs, &d.ID, &d.ProjectID, &d.Key, &d.RuleID, &d.ChannelID, &d.RunID, &d.TaskID, &d.Kind,
			&d.Title, &d.Content, &d.Status, &d.CreatedAtMs, &d.NextAtMs, &d.GiveUpAtMs, &d.Attempts, &d.LastStatus, &d.LastError,
			&d.FinishedAtMs, &d.DigestID)
		c.Token, c.Row, c.ProjectID = tok, d, d.ProjectID
		return c, err
	})
	return out, postgres.Translate(err)
}

// Claim implements controlplane.NotifyOutbox.
func (s *Outbox) Claim(ctx context.Context, owner string, lease time.Duration, now int64, limit int) ([]controlplane.DeliveryClaim, error) {
	if owner == "" || len(owner) > controlplane.MaxClaimOwnerBytes {
		return nil, errs.Invalidf("owner", "must be 1..%d bytes", controlplane.MaxClaimOwnerBytes)
	}
	cs, err := s.claim(ctx, sprintf(claimSQL, ""), owner, lease.Milliseconds(), now, limit)
	for i := range cs {
		cs[i].Owner = owner
	}
	return cs, err
}

// ClaimRow implements controlplane.NotifyOutbox.
func (s *Outbox) ClaimRow(ctx context.Context, owner string, lease time.Duration, id int64) (controlplane.DeliveryClaim, bool, error) {
	cs, err := s.claim(ctx, sprintf(claimSQL, "AND o.outbox_id = $5"), owner, lease.Milliseconds(), int64(1<<62), 1, id)
	if err != nil || len(cs) == 0 {
		return controlplane.DeliveryClaim{}, false, err
	}
	cs[0].Owner = owner
	return cs[0], true, nil
}

// ChannelSettings implements controlplane.NotifyOutbox.
func (s *Outbox) ChannelSettings(ctx context.Context, id string) (notifykit.Channel, channel.Settings, error) {
	var sealed []byte
	row := s.db.QueryRow(ctx, `SELECT `+channelColumns+`, sealed FROM ql3.notify_channels WHERE channel_id = $1::uuid`, id)
	var c notifykit.Channel
	var pub string
	if err := row.Scan(&c.ID, &c.Name, &c.Kind, &pub, &c.Enabled, &c.CreatedAtMs, &c.UpdatedAtMs, &sealed); err != nil {
		return c, channel.Settings{}, postgres.Translate(err)
	}
	plain, err := s.c.Open(id, notifykit.SealName, sealed)
	if err != nil {
		return c, channel.Settings{}, errs.E(errs.Internal, "", "channel %s settings do not open: %v", id, err)
	}
	st, err := notifykit.DecodeSettings([]byte(plain))
	return c, st, err
}

// Record implements controlplane.NotifyOutbox: the row moves and the
// attempt is logged only while the claim holds (full fence, database
// time); the claim is released with it.
func (s *Outbox) Record(ctx context.Context, c controlplane.DeliveryClaim, o notifykit.Outcome) error {
	return postgres.InTx(ctx, s.db, postgres.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		finished := int64(0)
		if o.Status != notifykit.StatusPending {
			finished = o.Attempt.AtMs + o.Attempt.LatencyMs
		}
		tag, err := tx.Exec(ctx, `UPDATE ql3.notify_outbox SET status = $5, attempts = attempts + 1, last_status = $6, last_error = $7,
	next_at_ms = CASE WHEN $5 = 'pending' THEN $8 ELSE next_at_ms END, finished_at_ms = $9,
	claim_owner = NULL, claim_token = NULL, claim_expires_at_ms = NULL
WHERE outbox_id = $1 AND claim_owner = $2 AND claim_token = $3::uuid AND claim_version = $4 AND claim_expires_at_ms > `+nowMs,
			c.Row.ID, c.Owner, uuid.UUID(c.Token), c.Version, o.Status, o.Attempt.StatusCode, o.Attempt.Error, o.NextAtMs, finished)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.E(errs.Conflict, "claim", "delivery %d: the claim no longer holds (expired or taken over)", c.Row.ID)
		}
		_, err = tx.Exec(ctx, `INSERT INTO ql3.notify_attempts (outbox_id, n, at_ms, status_code, error, latency_ms, owner)
VALUES ($1, (SELECT attempts FROM ql3.notify_outbox WHERE outbox_id = $1), $2, $3, $4, $5, $6)`,
			c.Row.ID, o.Attempt.AtMs, o.Attempt.StatusCode, o.Attempt.Error, o.Attempt.LatencyMs, c.Owner)
		return err
	})
}

// HeldDue implements controlplane.NotifyOutbox.
func (s *Outbox) HeldDue(ctx context.Context, now int64, limit int) ([]notifykit.Delivery, error) {
	rows, err := s.db.Query(ctx, `SELECT `+deliveryColumns+` FROM ql3.notify_outbox o WHERE o.status = 'held' AND o.next_at_ms <= $1
ORDER BY o.next_at_ms, o.outbox_id LIMIT $2`, now, limit)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (notifykit.Delivery, error) { return scanDelivery(r) })
	return out, postgres.Translate(err)
}

// Digest implements controlplane.NotifyOutbox; held rows another replica
// digested first are left alone (only rows still held move).
func (s *Outbox) Digest(ctx context.Context, d notifykit.NewDelivery, held []int64) error {
	return postgres.InTx(ctx, s.db, postgres.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		id, err := insertRow(ctx, tx, d)
		if err != nil || id == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE ql3.notify_outbox SET status = 'digested', digest_id = $1, finished_at_ms = $2
WHERE outbox_id = ANY($3::bigint[]) AND status = 'held'`, id, d.CreatedMs, held)
		return err
	})
}

// NextDueMs implements controlplane.NotifyOutbox.
func (s *Outbox) NextDueMs(ctx context.Context) (int64, bool, error) {
	var at *int64
	err := s.db.QueryRow(ctx, `SELECT min(next_at_ms) FROM ql3.notify_outbox WHERE status IN ('pending', 'held')`).Scan(&at)
	if err != nil || at == nil {
		return 0, false, postgres.Translate(err)
	}
	return *at, true, nil
}

// GetDelivery implements controlplane.NotifyOutbox.
func (s *Outbox) GetDelivery(ctx context.Context, id int64) (notifykit.Delivery, error) {
	return getDelivery(ctx, s.db, `o.outbox_id = $1`, id)
}
