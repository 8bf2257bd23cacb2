package notifystore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/notifykit"
)

const deliveryColumns = `o.outbox_id, o.project_id::text, o.idempotency_key, o.rule_id, o.channel_id::text, o.run_id, o.task_id, o.kind, o.title, o.content,
	o.status, o.created_at_ms, o.next_at_ms, o.give_up_at_ms, o.attempts, o.last_status, o.last_error, o.finished_at_ms, o.digest_id`

func scanDelivery(r pgx.Row) (notifykit.Delivery, error) {
	var d notifykit.Delivery
	err := r.Scan(&d.ID, &d.ProjectID, &d.Key, &d.RuleID, &d.ChannelID, &d.RunID, &d.TaskID, &d.Kind, &d.Title, &d.Content,
		&d.Status, &d.CreatedAtMs, &d.NextAtMs, &d.GiveUpAtMs, &d.Attempts, &d.LastStatus, &d.LastError, &d.FinishedAtMs, &d.DigestID)
	return d, postgres.Translate(err)
}

// attemptLog reads the log of the given rows.
func attemptLog(ctx context.Context, db postgres.DB, ds []notifykit.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]int64, len(ds))
	at := map[int64]int{}
	for i, d := range ds {
		ids[i], at[d.ID] = d.ID, i
	}
	rows, err := db.Query(ctx, `SELECT outbox_id, n, at_ms, status_code, error, latency_ms FROM ql3.notify_attempts
WHERE outbox_id = ANY($1::bigint[]) ORDER BY outbox_id, n`, ids)
	if err != nil {
		return postgres.Translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a notifykit.Attempt
		if err := rows.Scan(&id, &a.N, &a.AtMs, &a.StatusCode, &a.Error, &a.LatencyMs); err != nil {
			return postgres.Translate(err)
		}
		ds[at[id]].AttemptLog = append(ds[at[id]].AttemptLog, a)
	}
	return postgres.Translate(rows.Err())
}

func getDelivery(ctx context.Context, db postgres.DB, where string, args ...any) (notifykit.Delivery, error) {
	d, err := scanDelivery(db.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM ql3.notify_outbox o WHERE `+where, args...))
	if err != nil {
		if errs.Code(err) == errs.NotFound {
			return d, errs.NotFoundf("no such delivery")
		}
		return d, err
	}
	ds := []notifykit.Delivery{d}
	if err := attemptLog(ctx, db, ds); err != nil {
		return d, err
	}
	return ds[0], nil
}

// ListDeliveries implements controlplane.NotifyConfig: newest first,
// keyset on the id.
func (s *Config) ListDeliveries(ctx context.Context, project string, f notifykit.DeliveryFilter) ([]notifykit.Delivery, error) {
	if err := checkIDs(project, ""); err != nil {
		return nil, err
	}
	if f.Limit < 1 || f.Limit > notifykit.MaxPage {
		return nil, errs.Invalidf("limit", "must be 1..%d, got %d", notifykit.MaxPage, f.Limit)
	}
	where := []string{"o.project_id = $1::uuid"}
	args := []any{project}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Status != "" {
		add("o.status = $%d", f.Status)
	}
	if f.ChannelID != "" {
		if _, err := uuidOf("channelId", f.ChannelID); err != nil {
			return nil, err
		}
		add("o.channel_id = $%d::uuid", f.ChannelID)
	}
	if f.RunID != "" {
		add("o.run_id = $%d", f.RunID)
	}
	if f.BeforeID > 0 {
		add("o.outbox_id < $%d", f.BeforeID)
	}
	args = append(args, f.Limit)
	rows, err := s.db.Query(ctx, `SELECT `+deliveryColumns+` FROM ql3.notify_outbox o WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY o.project_id, o.outbox_id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (notifykit.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, postgres.Translate(err)
	}
	if out == nil {
		out = []notifykit.Delivery{}
	}
	return out, attemptLog(ctx, s.db, out)
}

// GetDelivery implements controlplane.NotifyConfig.
func (s *Config) GetDelivery(ctx context.Context, project string, id int64) (notifykit.Delivery, error) {
	if err := checkIDs(project, ""); err != nil {
		return notifykit.Delivery{}, err
	}
	return getDelivery(ctx, s.db, `o.outbox_id = $1 AND o.project_id = $2::uuid`, id, project)
}

// QueueTest implements controlplane.NotifyConfig.
func (s *Config) QueueTest(ctx context.Context, project, channelID string, now int64) (int64, error) {
	if err := checkIDs(project, channelID); err != nil {
		return 0, err
	}
	var id int64
	err := s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var name string
		if err := tx.QueryRow(ctx, `SELECT name FROM ql3.notify_channels WHERE channel_id = $1::uuid AND project_id = $2::uuid`,
			channelID, project).Scan(&name); err != nil {
			return notFound(err, "channel", channelID)
		}
		nd := notifykit.TestRow(channelID, name, "ql3-control", now)
		nd.ProjectID = project
		// The replica that answers the request sends it at once (DeliverNow);
		// should it die first, any replica sends it after this grace.
		nd.NextAtMs = now + TestGraceMs
		var err error
		if id, err = insertRow(ctx, tx, nd); err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditChannelTest, "notify_channel", channelID, map[string]any{"projectId": project, "delivery": id})
	})
	return id, err
}

// TestGraceMs is how long a queued "send test" waits for the replica that
// queued it before any replica may send it.
const TestGraceMs = 30_000

const insertRowSQL = `INSERT INTO ql3.notify_outbox (project_id, idempotency_key, rule_id, channel_id, run_id, task_id, kind, title, content,
	status, created_at_ms, next_at_ms, give_up_at_ms)
VALUES ($1::uuid, $2, $3, $4::uuid, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (idempotency_key) DO NOTHING RETURNING outbox_id`

// insertRow writes one row; a key that exists is skipped (id 0).
func insertRow(ctx context.Context, tx pgx.Tx, d notifykit.NewDelivery) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, insertRowSQL, d.ProjectID, d.Key, d.RuleID, d.ChannelID, d.RunID, d.TaskID, d.Kind,
		d.Title, d.Content, d.Status, d.CreatedMs, d.NextAtMs, d.GiveUpMs).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}
