package publication

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/find"
	"github.com/ql3/ql3/core/spec"
)

// Task labels, the filtered task list with its total, saved views
// (migration 0018; ADR 0050's contract on the control plane).

var _ controlplane.TaskFinding = (*Publisher)(nil)

const mutationTaskLabels = "task.set_labels"

// taskWhere builds the task list's condition for f with only the filters
// f uses (each a bind parameter), so the statement's plan is the one its
// filters need: a label walks task_labels' primary key, a search tests
// the covering index's search text.
func taskWhere(f controlplane.TaskFilter, proj *uuid.UUID, q, label string) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	conds = append(conds, "t.deleted_at_ms IS NULL")
	if proj != nil {
		conds = append(conds, "t.project_id = "+arg(*proj)+"::uuid")
	}
	if q != "" {
		conds = append(conds, "strpos(t.search_text, "+arg(q)+"::text) > 0")
	}
	if f.Enabled != nil {
		conds = append(conds, "t.enabled = "+arg(*f.Enabled)+"::bool")
	}
	if label != "" {
		conds = append(conds, "t.task_id IN (SELECT l.task_id FROM ql3.task_labels l WHERE l.label = "+arg(label)+"::text)")
	}
	return strings.Join(conds, " AND "), args
}

// FindTaskPage lists live tasks by f in task-id order with the number the
// filter selects (a first page that holds every match is its own count).
func (p *Publisher) FindTaskPage(ctx context.Context, f controlplane.TaskFilter) (controlplane.TaskPage, error) {
	q, err := find.CheckSearch("q", f.Q)
	if err != nil {
		return controlplane.TaskPage{}, err
	}
	label := ""
	if f.Label != "" {
		if label, err = find.CheckLabel("label", f.Label); err != nil {
			return controlplane.TaskPage{}, err
		}
	}
	limit, after, err := normalizeList(f.Page)
	if err != nil {
		return controlplane.TaskPage{}, err
	}
	var proj *uuid.UUID
	if f.ProjectID != "" {
		id, err := parsePubID("project", f.ProjectID)
		if err != nil {
			return controlplane.TaskPage{}, err
		}
		proj = &id
	}
	where, args := taskWhere(f, proj, q, label)
	page := where
	pargs := append([]any(nil), args...)
	if after != nil {
		pargs = append(pargs, *after)
		page += " AND t.task_id > $" + strconv.Itoa(len(pargs)) + "::uuid"
	}
	pargs = append(pargs, limit+1)
	rows, err := p.db.Query(ctx, taskSelect+" WHERE "+page+" ORDER BY t.task_id LIMIT $"+strconv.Itoa(len(pargs)), pargs...)
	if err != nil {
		return controlplane.TaskPage{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Task, error) { return scanTask(r) })
	if err != nil {
		return controlplane.TaskPage{}, pubReadErr(err)
	}
	lp := listPageOf(items, limit, func(x controlplane.Task) string { return x.ID })
	out := controlplane.TaskPage{Items: lp.Items, NextCursor: lp.NextCursor, Total: int64(len(items))}
	if after != nil || len(items) > limit {
		if err := p.db.QueryRow(ctx, "SELECT count(*) FROM ql3.tasks t WHERE "+where, args...).Scan(&out.Total); err != nil {
			return controlplane.TaskPage{}, pubReadErr(err)
		}
	}
	return out, nil
}

// SetTaskLabels replaces a live task's labels (find.CheckLabels) and its
// search text; no new revision. The audit line is task.set_labels.
func (p *Publisher) SetTaskLabels(ctx context.Context, taskRef string, labels []string) (controlplane.Task, error) {
	taskID, err := parsePubID("task", taskRef)
	if err != nil {
		return controlplane.Task{}, errs.NotFoundf("no task %.64q", taskRef)
	}
	ls, err := find.CheckLabels(labels)
	if err != nil {
		return controlplane.Task{}, err
	}
	req := struct {
		TaskID string   `json:"taskId"`
		Labels []string `json:"labels"`
	}{taskID.String(), ls}
	return publish(ctx, p, "", mutationTaskLabels, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Task, error) {
		t, err := readTask(ctx, tx, taskID)
		if err == nil && t.DeletedAtMs != 0 {
			err = errs.NotFoundf("no task %s", taskID)
		}
		if err != nil {
			return controlplane.Task{}, err
		}
		var projectID uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT project_id FROM ql3.tasks WHERE task_id = $1 FOR UPDATE`, taskID).Scan(&projectID); err != nil {
			return controlplane.Task{}, err
		}
		if err := writeTaskLabels(ctx, tx, taskID, projectID, t.Name, t.Spec, ls); err != nil {
			return controlplane.Task{}, err
		}
		return readTask(ctx, tx, taskID)
	})
}

// writeTaskLabels replaces the labels (already checked) of a task locked
// by tx and its search text.
func writeTaskLabels(ctx context.Context, tx pgx.Tx, taskID, projectID uuid.UUID, name string, cmd spec.Command, ls []string) error {
	if _, err := tx.Exec(ctx, `UPDATE ql3.tasks SET labels = $2, search_text = $3,
		updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`) WHERE task_id = $1`,
		taskID, ls, find.Text(name, cmd, ls)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM ql3.task_labels WHERE task_id = $1`, taskID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO ql3.task_labels (label, task_id, project_id)
		SELECT l, $1, $2 FROM unnest($3::text[]) AS l`, taskID, projectID, ls)
	return err
}

const viewSelect = `SELECT view_id::text, project_id::text, name, filter_q, filter_label, filter_enabled, created_at_ms FROM ql3.task_views`

func scanView(r pgx.Row) (controlplane.TaskView, error) {
	var v controlplane.TaskView
	err := r.Scan(&v.ID, &v.ProjectID, &v.Name, &v.Filter.Q, &v.Filter.Label, &v.Filter.Enabled, &v.CreatedAtMs)
	return v, err
}

// ListTaskViews lists a project's saved views by name (at most
// find.MaxViews exist).
func (p *Publisher) ListTaskViews(ctx context.Context, projectID string) ([]controlplane.TaskView, error) {
	proj, err := parsePubID("project", projectID)
	if err != nil {
		return nil, err
	}
	rows, err := p.db.Query(ctx, viewSelect+` WHERE project_id = $1 ORDER BY name, view_id LIMIT $2`, proj, find.MaxViews)
	if err != nil {
		return nil, pubReadErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.TaskView, error) { return scanView(r) })
	if err != nil {
		return nil, pubReadErr(err)
	}
	if out == nil {
		out = []controlplane.TaskView{}
	}
	return out, nil
}

// CreateTaskView saves a filter under a name unique in the project
// (find.CheckView), at most find.MaxViews per project; audited.
func (p *Publisher) CreateTaskView(ctx context.Context, projectID, name string, f controlplane.TaskViewFilter) (controlplane.TaskView, error) {
	proj, err := parsePubID("project", projectID)
	if err != nil {
		return controlplane.TaskView{}, err
	}
	n, vf, err := find.CheckView(name, find.ViewFilter{Search: f.Q, Label: f.Label, Enabled: f.Enabled})
	if err != nil {
		return controlplane.TaskView{}, err
	}
	id, err := controlplane.NewID()
	if err != nil {
		return controlplane.TaskView{}, err
	}
	var out controlplane.TaskView
	err = postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts},
		func(ctx context.Context, tx pgx.Tx) error {
			if _, err := lockPubProject(ctx, tx, proj, false, "project"); err != nil {
				return err
			}
			var count int
			var taken bool
			if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(name = $2), false) FROM ql3.task_views WHERE project_id = $1`, proj, n).
				Scan(&count, &taken); err != nil {
				return err
			}
			if taken {
				return errs.E(errs.Conflict, "name", "a view named %q exists", n)
			}
			if count >= find.MaxViews {
				return errs.Invalidf("", "a project has at most %d views", find.MaxViews)
			}
			v, err := scanView(tx.QueryRow(ctx, `INSERT INTO ql3.task_views (view_id, project_id, name, filter_q, filter_label, filter_enabled, created_at_ms)
				VALUES ($1, $2, $3, $4, $5, $6, `+dbNowMs+`)
				RETURNING view_id::text, project_id::text, name, filter_q, filter_label, filter_enabled, created_at_ms`,
				id, proj, n, vf.Search, vf.Label, vf.Enabled))
			if err != nil {
				return err
			}
			out = v
			return InsertAudit(ctx, tx, "task_view.create", "task_view", v.ID, map[string]any{"projectId": v.ProjectID, "name": v.Name})
		})
	return out, err
}

// DeleteTaskView deletes a saved view; audited.
func (p *Publisher) DeleteTaskView(ctx context.Context, viewRef string) error {
	id, err := parsePubID("view", viewRef)
	if err != nil {
		return errs.NotFoundf("no view %.64q", viewRef)
	}
	return postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts},
		func(ctx context.Context, tx pgx.Tx) error {
			var project, name string
			err := tx.QueryRow(ctx, `DELETE FROM ql3.task_views WHERE view_id = $1 RETURNING project_id::text, name`, id).Scan(&project, &name)
			if errors.Is(err, pgx.ErrNoRows) {
				return errs.NotFoundf("no view %s", id)
			}
			if err != nil {
				return err
			}
			return InsertAudit(ctx, tx, "task_view.delete", "task_view", id.String(), map[string]any{"projectId": project, "name": name})
		})
}
