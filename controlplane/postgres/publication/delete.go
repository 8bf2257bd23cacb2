package publication

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

// Deleting tasks and triggers (edge parity, migration 0009, ADR 0014). A
// delete is soft and one publication: the trigger gets a disabled head
// revision (its schedule is reset and can never be claimed again) and
// deleted_at_ms; a task is disabled and marked, with every live trigger of
// it. History stays; the names are free again; reads no longer find them.
// Waiting Runs of a deleted task (created, queued, retry_wait, lost) are
// cancelled by the lifecycle sweep (reason task_deleted); running ones
// finish.

const (
	mutationTaskDelete    = "task.delete"
	mutationTriggerDelete = "trigger.delete"
)

// DeleteTask deletes a task and its triggers.
func (p *Publisher) DeleteTask(ctx context.Context, in controlplane.DeleteInput) (controlplane.Task, error) {
	taskID, err := parsePubID("task", in.TaskID)
	if err != nil {
		return controlplane.Task{}, errs.NotFoundf("no task %.64q", in.TaskID)
	}
	req := struct {
		TaskID string `json:"taskId"`
	}{taskID.String()}
	return publish(ctx, p, in.MutationID, mutationTaskDelete, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Task, error) {
		var projectID uuid.UUID
		err := tx.QueryRow(ctx, `SELECT project_id FROM ql3.tasks WHERE task_id = $1 AND deleted_at_ms IS NULL FOR UPDATE`,
			taskID).Scan(&projectID)
		if errors.Is(err, pgx.ErrNoRows) {
			return controlplane.Task{}, errs.NotFoundf("no task %s", taskID)
		}
		if err != nil {
			return controlplane.Task{}, err
		}
		rows, err := tx.Query(ctx, `SELECT trigger_id FROM ql3.triggers WHERE task_id = $1 AND deleted_at_ms IS NULL
			ORDER BY trigger_id`, taskID)
		if err != nil {
			return controlplane.Task{}, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return controlplane.Task{}, err
		}
		for _, id := range ids {
			if _, err := deleteTrigger(ctx, tx, id, taskID); err != nil {
				return controlplane.Task{}, err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE ql3.tasks SET enabled = false, deleted_at_ms = greatest(`+dbNowMs+`, created_at_ms),
			updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`) WHERE task_id = $1`, taskID); err != nil {
			return controlplane.Task{}, err
		}
		return readTask(ctx, tx, taskID)
	})
}

// DeleteTrigger deletes one trigger of a task.
func (p *Publisher) DeleteTrigger(ctx context.Context, in controlplane.DeleteInput) (controlplane.Trigger, error) {
	taskID, err := parsePubID("task", in.TaskID)
	if err != nil {
		return controlplane.Trigger{}, errs.NotFoundf("no task %.64q", in.TaskID)
	}
	triggerID, err := parsePubID("trigger", in.TriggerID)
	if err != nil {
		return controlplane.Trigger{}, errs.NotFoundf("no trigger %.64q", in.TriggerID)
	}
	req := struct {
		TaskID    string `json:"taskId"`
		TriggerID string `json:"triggerId"`
	}{taskID.String(), triggerID.String()}
	return publish(ctx, p, in.MutationID, mutationTriggerDelete, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Trigger, error) {
		return deleteTrigger(ctx, tx, triggerID, taskID)
	})
}

// deleteTrigger writes the disabled head revision and the mark.
func deleteTrigger(ctx context.Context, tx pgx.Tx, triggerID, wantTask uuid.UUID) (controlplane.Trigger, error) {
	var taskID uuid.UUID
	var head int64
	var r triggerRequest
	err := tx.QueryRow(ctx, `SELECT tr.task_id, tr.head_revision, v.expression, v.time_zone, v.misfire_policy, v.misfire_grace_ms
		FROM ql3.triggers tr JOIN ql3.trigger_revisions v ON v.trigger_id = tr.trigger_id AND v.revision = tr.head_revision
		WHERE tr.trigger_id = $1 AND tr.deleted_at_ms IS NULL FOR UPDATE OF tr`, triggerID).
		Scan(&taskID, &head, &r.Expression, &r.TimeZone, &r.Misfire, &r.GraceMs)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && taskID != wantTask) {
		return controlplane.Trigger{}, errs.NotFoundf("task %s has no trigger %s", wantTask, triggerID)
	}
	if err != nil {
		return controlplane.Trigger{}, err
	}
	h, err := lockTaskHead(ctx, tx, taskID)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	tag, err := tx.Exec(ctx, `UPDATE ql3.triggers SET head_revision = $2, deleted_at_ms = greatest(`+dbNowMs+`, created_at_ms),
		updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`) WHERE trigger_id = $1 AND head_revision = $3`,
		triggerID, head+1, head)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if err := expectAffected(tag, "trigger %s changed concurrently", triggerID); err != nil {
		return controlplane.Trigger{}, err
	}
	r.Enabled = false
	if err := writeTriggerRevision(ctx, tx, triggerID, head+1, taskID, h, r); err != nil {
		return controlplane.Trigger{}, err
	}
	return readTrigger(ctx, tx, triggerID)
}
