package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
)

const insertTaskRevision = `INSERT INTO task_revisions (task_id, revision, spec_kind, spec_json, spec_digest,
    timeout_ms, max_attempts, backoff_base_ms, backoff_max_ms, retry_on_lost, concurrency, created_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func insertRevision(ctx context.Context, tx *wtx, taskID string, revision int64, cs edge.CompiledSpec, nowMs int64) error {
	r := cs.Spec.Retry
	_, err := tx.ExecContext(ctx, insertTaskRevision, taskID, revision, cs.Spec.Kind, string(cs.Canonical),
		cs.Digest.String(), cs.Spec.TimeoutMs, r.MaxAttempts, r.BackoffBaseMs, r.BackoffMaxMs,
		boolInt(r.RetryOnLost), string(cs.Spec.Concurrency), nowMs)
	return err
}

// CreateTask implements edge.TaskStore.
func (s *Store) CreateTask(ctx context.Context, in edge.NewTask) (edge.Task, error) {
	v, err := edge.CheckNewTask(in)
	if err != nil {
		return edge.Task{}, err
	}
	now := s.clock.Now().UnixMilli()
	id := newID()
	err = s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		return createTaskTx(ctx, tx, sg, id, v, now)
	})
	if err != nil {
		return edge.Task{}, err
	}
	return s.GetTask(ctx, id)
}

// createTaskTx writes a validated task with its revision, labels and
// triggers inside tx (CreateTask; a subscription's plan, ADR 0054).
func createTaskTx(ctx context.Context, tx *wtx, sg *signals, id string, v edge.ValidTask, now int64) error {
	if err := checkNameFree(ctx, tx, v.Name, ""); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, project_id, name, enabled, current_revision,
            created_at_ms, updated_at_ms, search_text) VALUES (?, ?, ?, ?, 1, ?, ?, ?)`,
		id, edge.DefaultProjectID, v.Name, boolInt(v.Enabled), now, now,
		edge.SearchText(v.Name, v.Spec.Spec, v.Labels)); err != nil {
		return err
	}
	if len(v.Labels) > 0 {
		if err := writeLabels(ctx, tx, id, v.Name, v.Spec.Spec, v.Labels); err != nil {
			return err
		}
	}
	if err := insertRevision(ctx, tx, id, 1, v.Spec, now); err != nil {
		return err
	}
	for _, t := range v.Triggers {
		if err := insertTrigger(ctx, tx, newID(), id, t, v.Enabled, now); err != nil {
			return err
		}
		sg.schedulesChanged = true
	}
	return nil
}

func checkNameFree(ctx context.Context, tx *wtx, name, exceptID string) error {
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM tasks WHERE project_id = ? AND name = ? AND deleted_at_ms IS NULL`,
		edge.DefaultProjectID, name).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case id == exceptID:
		return nil
	}
	return errs.E(errs.Conflict, "name", "a task named %q already exists", name)
}

// UpdateTask implements edge.TaskStore.
func (s *Store) UpdateTask(ctx context.Context, taskID string, expectedRevision int64, in edge.TaskUpdate) (edge.Task, error) {
	name, cs, err := edge.CheckTaskUpdate(in)
	if err != nil {
		return edge.Task{}, err
	}
	var labels []string
	if in.Labels != nil {
		if labels, err = edge.CheckLabels(*in.Labels); err != nil {
			return edge.Task{}, err
		}
	}
	now := s.clock.Now().UnixMilli()
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		cur, err := getTask(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if cur.Deleted() {
			return errs.NotFoundf("task %s was deleted", taskID)
		}
		if cur.Revision != expectedRevision {
			return errs.E(errs.Conflict, "revision", "task %s is at revision %d, not %d", taskID, cur.Revision, expectedRevision)
		}
		if in.Labels == nil {
			labels = cur.Labels
		} else if !slices.Equal(labels, cur.Labels) {
			if err := writeLabels(ctx, tx, taskID, name, cs.Spec, labels); err != nil {
				return err
			}
		}
		if cur.Name == name && cur.Digest == cs.Digest {
			return nil // nothing changed: publish nothing
		}
		if err := checkNameFree(ctx, tx, name, taskID); err != nil {
			return err
		}
		next := cur.Revision + 1
		if err := insertRevision(ctx, tx, taskID, next, cs, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tasks SET name = ?, current_revision = ?, updated_at_ms = ?, search_text = ? WHERE id = ?`,
			name, next, now, edge.SearchText(name, cs.Spec, labels), taskID)
		return err
	})
	if err != nil {
		return edge.Task{}, err
	}
	return s.GetTask(ctx, taskID)
}

// setTaskEnabledTx is SetTaskEnabled inside tx.
func setTaskEnabledTx(ctx context.Context, tx *wtx, sg *signals, taskID string, enabled bool, now int64) error {
	cur, err := getTask(ctx, tx, taskID)
	if err != nil {
		return err
	}
	if cur.Deleted() {
		return errs.NotFoundf("task %s was deleted", taskID)
	}
	if cur.Enabled == enabled {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET enabled = ?, updated_at_ms = ? WHERE id = ?`,
		boolInt(enabled), now, taskID); err != nil {
		return err
	}
	// Enabling resets the cursors: the disabled span is not replayed,
	// whatever the misfire policy says.
	if err := refreshSchedules(ctx, tx, taskID, enabled, now); err != nil {
		return err
	}
	sg.schedulesChanged = true
	return nil
}

// SetTaskEnabled implements edge.TaskStore.
func (s *Store) SetTaskEnabled(ctx context.Context, taskID string, enabled bool) (edge.Task, error) {
	now := s.clock.Now().UnixMilli()
	err := s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		return setTaskEnabledTx(ctx, tx, sg, taskID, enabled, now)
	})
	if err != nil {
		return edge.Task{}, err
	}
	return s.GetTask(ctx, taskID)
}

// refreshSchedules recomputes the active flag of every live trigger of a
// task; reset=true also clears their cursors.
func refreshSchedules(ctx context.Context, tx *wtx, taskID string, reset bool, nowMs int64) error {
	q := `UPDATE trigger_schedules SET
    active = (SELECT t.enabled = 1 AND t.deleted_at_ms IS NULL AND tr.deleted_at_ms IS NULL AND r.enabled = 1
              FROM triggers tr JOIN tasks t ON t.id = tr.task_id
              JOIN trigger_revisions r ON r.trigger_id = tr.id AND r.revision = tr.current_revision
              WHERE tr.id = trigger_schedules.trigger_id),
    state_version = state_version + 1,
    updated_at_ms = ?`
	if reset {
		q += `, initialized = 0, next_fire_at_ms = 0, last_error = ''`
	}
	q += ` WHERE trigger_id IN (SELECT id FROM triggers WHERE task_id = ?)`
	_, err := tx.ExecContext(ctx, q, nowMs, taskID)
	return err
}

// deleteTaskTx is DeleteTask inside tx.
func deleteTaskTx(ctx context.Context, tx *wtx, sg *signals, taskID string, now int64) error {
	cur, err := getTask(ctx, tx, taskID)
	if err != nil {
		return err
	}
	if cur.Deleted() {
		return errs.NotFoundf("task %s was deleted", taskID)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET enabled = 0, deleted_at_ms = ?, updated_at_ms = ? WHERE id = ?`,
		now, now, taskID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE triggers SET deleted_at_ms = ?, updated_at_ms = ?
            WHERE task_id = ? AND deleted_at_ms IS NULL`, now, now, taskID); err != nil {
		return err
	}
	if err := refreshSchedules(ctx, tx, taskID, false, now); err != nil {
		return err
	}
	if err := cancelWaitingRuns(ctx, tx, taskID, edge.ReasonTaskDeleted, now); err != nil {
		return err
	}
	sg.schedulesChanged = true
	return nil
}

// DeleteTask implements edge.TaskStore.
func (s *Store) DeleteTask(ctx context.Context, taskID string) error {
	now := s.clock.Now().UnixMilli()
	return s.writeDurable(ctx, func(tx *wtx, sg *signals) error {
		return deleteTaskTx(ctx, tx, sg, taskID, now)
	})
}

// GetTask implements edge.TaskStore.
func (s *Store) GetTask(ctx context.Context, taskID string) (edge.Task, error) {
	return getTask(ctx, s.reader, taskID)
}

// GetTaskByName implements edge.TaskStore.
func (s *Store) GetTaskByName(ctx context.Context, name string) (edge.Task, error) {
	row := s.reader.QueryRowContext(ctx, selectTask+` WHERE t.project_id = ? AND t.name = ? AND t.deleted_at_ms IS NULL`,
		edge.DefaultProjectID, edge.LookupName(name))
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return edge.Task{}, errs.NotFoundf("no task named %q", name)
	}
	return t, translate(err)
}

// GetTaskRevision implements edge.TaskStore.
func (s *Store) GetTaskRevision(ctx context.Context, taskID string, revision int64) (edge.TaskRevision, error) {
	return getTaskRevision(ctx, s.reader, taskID, revision)
}

const qTaskRevision = `SELECT spec_json, spec_digest, created_at_ms FROM task_revisions
WHERE task_id = ? AND revision = ?`

func getTaskRevision(ctx context.Context, q queryer, taskID string, revision int64) (edge.TaskRevision, error) {
	var (
		tr     = edge.TaskRevision{TaskID: taskID, Revision: revision}
		js, dg string
	)
	err := q.QueryRowContext(ctx, qTaskRevision, taskID, revision).Scan(&js, &dg, &tr.CreatedAtMs)
	if errors.Is(err, sql.ErrNoRows) {
		return edge.TaskRevision{}, errs.NotFoundf("task %s has no revision %d", taskID, revision)
	}
	if err != nil {
		return edge.TaskRevision{}, translate(err)
	}
	if tr.Spec, err = spec.Decode([]byte(js)); err != nil {
		return edge.TaskRevision{}, errs.E(errs.Internal, "", "stored spec of task %s revision %d: %v", taskID, revision, err)
	}
	if tr.Digest, err = canonjson.ParseDigest(dg); err != nil {
		return edge.TaskRevision{}, errs.E(errs.Internal, "", "stored digest of task %s revision %d: %v", taskID, revision, err)
	}
	tr.Canonical = []byte(js)
	return tr, nil
}

// listQuery is a list's statements: the page and the count.
type listQuery struct {
	list, count         string
	listArgs, countArgs []any
}

// tasksQuery builds ListTasks' statements (TestFindQueryPlans reads
// their plans).
func tasksQuery(f edge.TaskFilter, limit int) (listQuery, error) {
	search, err := edge.CheckSearch("q", f.Search)
	if err != nil {
		return listQuery{}, err
	}
	where := ` WHERE t.project_id = ?`
	args := []any{edge.DefaultProjectID}
	if !f.IncludeDeleted {
		where += ` AND t.deleted_at_ms IS NULL`
	}
	if search != "" {
		where += ` AND instr(t.search_text, ?) > 0`
		args = append(args, search)
	}
	if f.Label != "" {
		where += ` AND t.id IN (SELECT task_id FROM task_labels WHERE label = ?)`
		args = append(args, edge.LookupName(f.Label))
	}
	if f.Enabled != nil {
		where += ` AND t.enabled = ?`
		args = append(args, boolInt(*f.Enabled))
	}
	lq := listQuery{count: `SELECT COUNT(*) FROM tasks t` + where, countArgs: slices.Clone(args), list: selectTask + where}
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return listQuery{}, err
		}
		lq.list += ` AND (t.created_at_ms, t.id) > (?, ?)`
		args = append(args, c.AtMs, c.ID)
	}
	lq.list += ` ORDER BY t.created_at_ms, t.id LIMIT ?`
	lq.listArgs = append(args, limit+1)
	return lq, nil
}

// ListTasks implements edge.TaskStore: oldest first, keyset on
// (created_at_ms, id), filtered by search text, label and enabled; Total
// counts what the filter selects (ADR 0050).
func (s *Store) ListTasks(ctx context.Context, f edge.TaskFilter) (edge.TaskPage, error) {
	limit, err := pageLimit(f.Limit)
	if err != nil {
		return edge.TaskPage{}, err
	}
	tq, err := tasksQuery(f, limit)
	if err != nil {
		return edge.TaskPage{}, err
	}
	// One read transaction: the page and the count agree.
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return edge.TaskPage{}, translate(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, tq.list, tq.listArgs...)
	if err != nil {
		return edge.TaskPage{}, translate(err)
	}
	defer rows.Close()
	var page edge.TaskPage
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return edge.TaskPage{}, translate(err)
		}
		page.Tasks = append(page.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return edge.TaskPage{}, translate(err)
	}
	rows.Close()
	// A first page that holds every match is its own count: a rare search
	// scans the index once, not twice.
	if f.Cursor == "" && len(page.Tasks) <= limit {
		page.Total = int64(len(page.Tasks))
	} else if err := tx.QueryRowContext(ctx, tq.count, tq.countArgs...).Scan(&page.Total); err != nil {
		return edge.TaskPage{}, translate(err)
	}
	if len(page.Tasks) > limit {
		page.Tasks = page.Tasks[:limit]
		last := page.Tasks[limit-1]
		page.NextCursor = encodeCursor(cursor{AtMs: last.CreatedAtMs, ID: last.ID})
	}
	return page, nil
}

const selectTask = `SELECT t.id, t.project_id, t.name, t.enabled, t.current_revision, r.spec_json, r.spec_digest,
    t.created_at_ms, t.updated_at_ms, IFNULL(t.deleted_at_ms, 0), t.labels
FROM tasks t JOIN task_revisions r ON r.task_id = t.id AND r.revision = t.current_revision`

func getTask(ctx context.Context, q queryer, taskID string) (edge.Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, selectTask+` WHERE t.id = ?`, taskID))
	if errors.Is(err, sql.ErrNoRows) {
		return edge.Task{}, errs.NotFoundf("task %s not found", taskID)
	}
	return t, translate(err)
}

func scanTask(sc scanner) (edge.Task, error) {
	var (
		t          edge.Task
		js, dg, ls string
	)
	if err := sc.Scan(&t.ID, &t.ProjectID, &t.Name, &t.Enabled, &t.Revision, &js, &dg,
		&t.CreatedAtMs, &t.UpdatedAtMs, &t.DeletedAtMs, &ls); err != nil {
		return edge.Task{}, err
	}
	if err := json.Unmarshal([]byte(ls), &t.Labels); err != nil {
		return edge.Task{}, errs.E(errs.Internal, "", "stored labels of task %s: %v", t.ID, err)
	}
	var err error
	if t.Spec, err = spec.Decode([]byte(js)); err != nil {
		return edge.Task{}, errs.E(errs.Internal, "", "stored spec of task %s: %v", t.ID, err)
	}
	if t.Digest, err = canonjson.ParseDigest(dg); err != nil {
		return edge.Task{}, errs.E(errs.Internal, "", "stored digest of task %s: %v", t.ID, err)
	}
	return t, nil
}

// queryer is *sql.DB or *wtx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return edge.DefaultPageSize, nil
	case n < 0 || n > edge.MaxPageSize:
		return 0, errs.Invalidf("limit", "must be 1..%d, got %d", edge.MaxPageSize, n)
	}
	return n, nil
}
