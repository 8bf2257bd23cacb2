package sqlite

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
)

// subTaskRow is one task a subscription made, with the task as it is now.
type subTaskRow struct {
	taskID, path, appliedName, givenName, appliedCron string
	appliedRevision                                   int64
	name                                              string
	revision                                          int64
	enabled, deleted                                  bool
	triggers                                          int
	triggerID, cron                                   string
	triggerRevision                                   int64
}

func listSubTasks(ctx context.Context, q queryer, subID string) ([]subTaskRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT st.task_id, st.path, st.applied_name, st.given_name, st.applied_cron,
    st.applied_revision, t.name, t.current_revision, t.enabled, t.deleted_at_ms IS NOT NULL,
    (SELECT count(*) FROM triggers tr WHERE tr.task_id = t.id AND tr.deleted_at_ms IS NULL),
    IFNULL((SELECT tr.id FROM triggers tr WHERE tr.task_id = t.id AND tr.deleted_at_ms IS NULL ORDER BY tr.id LIMIT 1), ''),
    IFNULL((SELECT r.expression FROM triggers tr JOIN trigger_revisions r ON r.trigger_id = tr.id AND r.revision = tr.current_revision
            WHERE tr.task_id = t.id AND tr.deleted_at_ms IS NULL ORDER BY tr.id LIMIT 1), ''),
    IFNULL((SELECT tr.current_revision FROM triggers tr WHERE tr.task_id = t.id AND tr.deleted_at_ms IS NULL ORDER BY tr.id LIMIT 1), 0)
FROM subscription_tasks st JOIN tasks t ON t.id = st.task_id
WHERE st.subscription_id = ? ORDER BY st.path, st.task_id`, subID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []subTaskRow
	for rows.Next() {
		var r subTaskRow
		var enabled, deleted int
		if err := rows.Scan(&r.taskID, &r.path, &r.appliedName, &r.givenName, &r.appliedCron, &r.appliedRevision,
			&r.name, &r.revision, &enabled, &deleted, &r.triggers, &r.triggerID, &r.cron, &r.triggerRevision); err != nil {
			return nil, err
		}
		r.enabled, r.deleted = enabled == 1, deleted == 1
		out = append(out, r)
	}
	return out, rows.Err()
}

// planTask is the planner's view of a row: a task renamed, re-published,
// given other triggers or deleted by a person is hand-edited.
func (r subTaskRow) planTask() subplan.Task {
	current := r.appliedName
	if r.name != r.givenName {
		current = r.name
	}
	return subplan.Task{ID: r.taskID, Path: r.path, AppliedName: r.appliedName, AppliedCron: r.appliedCron,
		CurrentName: current, CurrentCron: r.cron, Enabled: r.enabled,
		HandEdited: r.deleted || r.revision != r.appliedRevision || r.triggers != 1}
}

// SubscriptionPlanTasks implements edge.SubscriptionStore.
func (s *Store) SubscriptionPlanTasks(ctx context.Context, id string) ([]subplan.Task, error) {
	if _, err := getSub(ctx, s.reader, id); err != nil {
		return nil, err
	}
	rows, err := listSubTasks(ctx, s.reader, id)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]subplan.Task, len(rows))
	for i, r := range rows {
		out[i] = r.planTask()
	}
	return out, nil
}

// ApplySubscriptionPlan implements edge.SubscriptionStore. A change whose
// task moved since the plan (a person edited it meanwhile) is answered as
// diverged and not applied; everything else commits together with the
// subscription's new commit and pull time.
func (s *Store) ApplySubscriptionPlan(ctx context.Context, in edge.SubscriptionApply) ([]subplan.Change, error) {
	now := s.clock.Now().UnixMilli()
	var out []subplan.Change
	err := s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		out = out[:0]
		sub, err := getSub(ctx, tx, in.SubscriptionID)
		if err != nil {
			return err
		}
		rows, err := listSubTasks(ctx, tx, sub.ID)
		if err != nil {
			return err
		}
		byID := map[string]subTaskRow{}
		for _, r := range rows {
			byID[r.taskID] = r
		}
		for _, c := range in.Changes {
			if !c.Mutates() {
				out = append(out, c)
				continue
			}
			done, err := applyChange(ctx, tx, sg, sub, byID, c, in.Actor, now)
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.Action, c.Path, err)
			}
			out = append(out, done)
		}
		_, err = tx.ExecContext(ctx, `UPDATE subscriptions SET last_commit = ?, last_pull_at_ms = ? WHERE id = ?`,
			in.Commit, in.PulledAtMs, sub.ID)
		return err
	})
	return out, err
}

func applyChange(ctx context.Context, tx *wtx, sg *signals, sub edge.Subscription, byID map[string]subTaskRow,
	c subplan.Change, actor string, now int64) (subplan.Change, error) {
	audit := func(action, taskID string) error {
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: action, Target: taskID, Actor: actor,
			Detail: fmt.Sprintf("origin=subscription:%s (%s) path=%s cron=%s", sub.ID, sub.Name, c.Path, c.Cron)})
	}
	trig := edge.TriggerInput{Expression: c.Cron, TimeZone: sub.TimeZone, Enabled: true}
	if c.Action == subplan.Add {
		v, err := edge.CheckNewTask(edge.NewTask{Name: c.Name, Enabled: true, Spec: scriptSpec(sub.Slug, c.Path),
			Labels: subLabels(sub), Triggers: []edge.TriggerInput{trig}})
		if err != nil {
			return c, err
		}
		given, err := freeName(ctx, tx, v.Name, sub.Slug+"/"+c.Path)
		if err != nil {
			return c, err
		}
		v.Name = given
		id := newID()
		if err := createTaskTx(ctx, tx, sg, id, v, now); err != nil {
			return c, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO subscription_tasks (subscription_id, task_id, path, applied_name,
            given_name, applied_cron, applied_revision) VALUES (?, ?, ?, ?, ?, ?, 1)`, sub.ID, id, c.Path, c.Name, given, c.Cron); err != nil {
			return c, err
		}
		c.TaskID = id
		return c, audit(edge.AuditSubAddTask, id)
	}
	r, ok := byID[c.TaskID]
	if !ok {
		return c, errs.NotFoundf("task %s is not one of this subscription's", c.TaskID)
	}
	if r.planTask().Diverged() {
		return subplan.Change{Action: subplan.Diverged, Path: c.Path, TaskID: c.TaskID, Reason: "edited by hand while the pull ran: not overwritten"}, nil
	}
	switch c.Action {
	case subplan.Update:
		given, revision := r.givenName, r.revision
		if c.Name != r.appliedName {
			var err error
			if given, err = freeName(ctx, tx, c.Name, sub.Slug+"/"+c.Path); err != nil {
				return c, err
			}
			if revision, err = renameTaskTx(ctx, tx, r.taskID, r.revision, given, now); err != nil {
				return c, err
			}
		}
		if c.Cron != r.appliedCron {
			in, err := edge.NormalizeTrigger(trig)
			if err != nil {
				return c, err
			}
			if err := updateTriggerTx(ctx, tx, sg, r.triggerID, r.triggerRevision, in, now); err != nil {
				return c, err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subscription_tasks SET applied_name = ?, given_name = ?, applied_cron = ?,
            applied_revision = ? WHERE subscription_id = ? AND task_id = ?`, c.Name, given, c.Cron, revision, sub.ID, r.taskID); err != nil {
			return c, err
		}
		return c, audit(edge.AuditSubUpdTask, r.taskID)
	case subplan.Disable:
		if err := setTaskEnabledTx(ctx, tx, sg, r.taskID, false, now); err != nil {
			return c, err
		}
		return c, audit(edge.AuditSubDisTask, r.taskID)
	case subplan.Remove:
		if err := deleteTaskTx(ctx, tx, sg, r.taskID, now); err != nil {
			return c, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM subscription_tasks WHERE subscription_id = ? AND task_id = ?`, sub.ID, r.taskID); err != nil {
			return c, err
		}
		return c, audit(edge.AuditSubDelTask, r.taskID)
	}
	return c, errs.Invalidf("action", "unknown action %q", c.Action)
}

// scriptSpec is the spec of a task a subscription makes: the script by
// its path in the scripts folder, every other field at its default.
func scriptSpec(slug, path string) spec.Command {
	return spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: slug + "/" + path}}.WithDefaults()
}

// subLabels labels a subscription's tasks with its folder (when it fits a label).
func subLabels(sub edge.Subscription) []string {
	l := "sub:" + sub.Slug
	if utf8.RuneCountInString(l) > edge.MaxLabelChars {
		return nil
	}
	return []string{l}
}

// freeName returns name when no live task has it, else name with the
// script's path added ("京豆 (repo/jd_bean.js)"), else with a number.
func freeName(ctx context.Context, tx *wtx, name, path string) (string, error) {
	try := []string{name, name + " (" + path + ")"}
	for i := 2; i <= 9; i++ {
		try = append(try, fmt.Sprintf("%s (%s #%d)", name, path, i))
	}
	for _, n := range try {
		n, err := edge.CheckTaskName(clip(n, edge.MaxTaskName))
		if err != nil {
			return "", err
		}
		if errs.Code(checkNameFree(ctx, tx, n, "")) != errs.Conflict {
			return n, nil
		}
	}
	return "", errs.Conflictf("no free task name for %q", name)
}

func clip(s string, chars int) string {
	if utf8.RuneCountInString(s) <= chars {
		return s
	}
	r := []rune(s)
	return string(r[:chars])
}

// renameTaskTx publishes a new revision of a task with the same spec and
// a new name, as UpdateTask does for a rename.
func renameTaskTx(ctx context.Context, tx *wtx, taskID string, cur int64, name string, now int64) (int64, error) {
	rev, err := getTaskRevision(ctx, tx, taskID, cur)
	if err != nil {
		return 0, err
	}
	t, err := getTask(ctx, tx, taskID)
	if err != nil {
		return 0, err
	}
	next := cur + 1
	cs := edge.CompiledSpec{Spec: rev.Spec, Canonical: rev.Canonical, Digest: rev.Digest}
	if err := insertRevision(ctx, tx, taskID, next, cs, now); err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE tasks SET name = ?, current_revision = ?, updated_at_ms = ?, search_text = ? WHERE id = ?`,
		name, next, now, edge.SearchText(name, rev.Spec, t.Labels), taskID)
	return next, err
}
