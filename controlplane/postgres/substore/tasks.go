package substore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
)

// SubscriptionPlanTasks lists the tasks a subscription made as the
// planner sees them. A task a person deleted, gave another spec
// (command, timeout…: the spec digest differs), or whose live triggers are not exactly the one the
// pull wrote, is hand-edited; a renamed one shows its new name.
func (s *Store) SubscriptionPlanTasks(ctx context.Context, id string) ([]subplan.Task, error) {
	sid, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT st.task_id, st.path, st.applied_name, st.given_name, st.applied_cron, st.applied_digest,
			t.name, t.enabled, r.spec_digest, t.deleted_at_ms IS NOT NULL,
			(SELECT count(*) FROM ql3.triggers g WHERE g.task_id = t.task_id AND g.deleted_at_ms IS NULL),
			coalesce((SELECT r.expression FROM ql3.triggers g JOIN ql3.trigger_revisions r
				ON r.trigger_id = g.trigger_id AND r.revision = g.head_revision
				WHERE g.task_id = t.task_id AND g.deleted_at_ms IS NULL ORDER BY g.trigger_id LIMIT 1), '')
		FROM ql3.subscription_tasks st JOIN ql3.tasks t ON t.task_id = st.task_id
		JOIN ql3.task_revisions r ON r.task_id = t.task_id AND r.revision = t.head_revision
		WHERE st.subscription_id = $1 ORDER BY st.path, st.task_id LIMIT $2`, sid, maxTasks+1)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (subplan.Task, error) {
		var t subplan.Task
		var task uuid.UUID
		var given string
		var applied, head []byte
		var triggers int64
		var deleted bool
		if err := r.Scan(&task, &t.Path, &t.AppliedName, &given, &t.AppliedCron, &applied,
			&t.CurrentName, &t.Enabled, &head, &deleted, &triggers, &t.CurrentCron); err != nil {
			return t, err
		}
		t.ID = task.String()
		// The planner compares the declared name; the task carries the
		// name it was given (a suffix when the declared one was taken).
		renamed := t.CurrentName != given
		if !renamed {
			t.CurrentName = t.AppliedName
		}
		t.HandEdited = renamed || deleted || string(head) != string(applied) || triggers != 1
		return t, nil
	})
	if err != nil {
		return nil, postgres.Translate(err)
	}
	if len(out) > maxTasks {
		return nil, errs.TooLargef("tasks", "the subscription made more than %d tasks", maxTasks)
	}
	return out, nil
}

// maxTasks bounds the tasks one subscription makes (one per script).
const maxTasks = 8192

// RecordSubscriptionTask records (or replaces) what a pull applied to a task.
func (s *Store) RecordSubscriptionTask(ctx context.Context, t controlplane.SubscriptionTask) error {
	sid, err := parseID("subscriptionId", t.SubscriptionID)
	if err != nil {
		return err
	}
	tid, err := parseID("taskId", t.TaskID)
	if err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `INSERT INTO ql3.subscription_tasks (subscription_id, task_id, project_id, path, applied_name,
			given_name, applied_cron, applied_revision, applied_digest)
		SELECT $1, $2, project_id, $3, $4, $5, $6, $7, $8 FROM ql3.subscriptions WHERE subscription_id = $1
		ON CONFLICT (subscription_id, task_id) DO UPDATE SET path = excluded.path, applied_name = excluded.applied_name,
			given_name = excluded.given_name, applied_cron = excluded.applied_cron, applied_revision = excluded.applied_revision,
			applied_digest = excluded.applied_digest`,
		sid, tid, t.Path, t.AppliedName, t.GivenName, t.AppliedCron, t.AppliedRevision, t.AppliedDigest[:])
	if err != nil {
		return postgres.Translate(err)
	}
	if tag.RowsAffected() != 1 {
		return errs.NotFoundf("no subscription %s", sid)
	}
	return nil
}

// ForgetSubscriptionTask drops the record of a task the pull removed.
func (s *Store) ForgetSubscriptionTask(ctx context.Context, id, taskID string) error {
	sid, err := parseID("id", id)
	if err != nil {
		return err
	}
	tid, err := parseID("taskId", taskID)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `DELETE FROM ql3.subscription_tasks WHERE subscription_id = $1 AND task_id = $2`, sid, tid)
	return postgres.Translate(err)
}

// RecordSubscriptionPull records the commit now published and audits the
// pull with details (counts of the plan's changes; nothing secret).
func (s *Store) RecordSubscriptionPull(ctx context.Context, id, commit string, details map[string]any) (controlplane.Subscription, error) {
	sid, err := parseID("id", id)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	var out controlplane.Subscription
	err = postgres.InTx(ctx, s.db, postgres.Serializable, func(ctx context.Context, tx pgx.Tx) error {
		out, err = scan(tx.QueryRow(ctx, `UPDATE ql3.subscriptions SET last_commit = $2, last_pull_at_ms = `+dbNowMs+`
			WHERE subscription_id = $1 RETURNING `+columns, sid, commit))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no subscription %s", sid)
		}
		if err != nil {
			return err
		}
		d := map[string]any{"commit": commit}
		for k, v := range details {
			d[k] = v
		}
		return audit(ctx, tx, controlplane.AuditSubPull, out, d)
	})
	return out, err
}
