package publication

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/find"
	"github.com/ql3/ql3/core/placement/matcher"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
)

// ExecutorRemoteWorker is the only executor of the cluster profile.
const ExecutorRemoteWorker = "remote_worker"

// MaxInlineTriggers bounds the triggers created with a task.
const MaxInlineTriggers = 16

// compiledSpec is a validated spec ready to be stored.
type compiledSpec struct {
	cmd       spec.Command
	canonical []byte
	digest    canonjson.Digest
	placement []byte // canonical JSON of the normalised placement, nil when none
}

// compileSpec validates cmd completely, including the semver ranges of its
// placement, which only the matcher parses. Errors name the field inside a
// task body ("spec.retry.maxAttempts", "spec.placement.required.runtimes.python").
func compileSpec(cmd spec.Command) (compiledSpec, error) {
	canonical, err := cmd.Canonical()
	if err != nil {
		return compiledSpec{}, errs.Prefix("spec", err)
	}
	// Re-decode the canonical form: what is stored and digested is exactly
	// what a worker will decode, defaults and normalisation included.
	norm, err := spec.Decode(canonical)
	if err != nil {
		return compiledSpec{}, errs.Prefix("spec", err)
	}
	// A script task runs a file of the project's scripts folder whose
	// extension names an interpreter (the same table as the edge's); the
	// tree it runs from is pinned at insertTaskRevision (ADR 0052).
	if norm.Script != nil {
		if _, err := scriptpath.DefaultInterpretersTable().For("spec.script.file", norm.Script.File); err != nil {
			return compiledSpec{}, err
		}
	}
	// So does a shell task whose command is a `task FILE [ARGS]` line: it
	// is pinned and run like one; a task line ql3 refuses is refused here
	// with the edge's message.
	if err := checkShellTask(norm); err != nil {
		return compiledSpec{}, err
	}
	c := compiledSpec{cmd: norm, canonical: canonical, digest: canonjson.Sum(spec.DigestDomain, canonical)}
	if norm.Placement != nil {
		if _, err := matcher.Compile(*norm.Placement); err != nil {
			return compiledSpec{}, errs.Prefix("spec", err)
		}
		if c.placement, err = canonjson.Canonical(norm.Placement); err != nil {
			return compiledSpec{}, errs.E(errs.Internal, "", "encode placement: %v", err)
		}
	}
	return c, nil
}

type taskRequest struct {
	ProjectID        string           `json:"projectId,omitempty"`
	TaskID           string           `json:"taskId,omitempty"`
	ExpectedRevision int64            `json:"expectedRevision,omitempty"`
	Name             string           `json:"name"`
	Enabled          *bool            `json:"enabled,omitempty"`
	SpecDigest       canonjson.Digest `json:"specDigest"`
	Triggers         []triggerRequest `json:"triggers,omitempty"`
}

// PublishTask creates or updates a task (see the package notes on
// publication). An update that changes neither name nor spec still
// publishes a new revision: the caller asked for one.
func (p *Publisher) PublishTask(ctx context.Context, in controlplane.TaskInput) (controlplane.Task, error) {
	if err := checkPubName("name", &in.Name); err != nil {
		return controlplane.Task{}, err
	}
	cs, err := compileSpec(in.Spec)
	if err != nil {
		return controlplane.Task{}, err
	}
	req := taskRequest{Name: in.Name, Enabled: in.Enabled, SpecDigest: cs.digest}
	if in.TaskID == "" {
		projectID, err := parsePubID("projectId", in.ProjectID)
		if err != nil {
			return controlplane.Task{}, err
		}
		if in.ExpectedRevision != 0 {
			return controlplane.Task{}, errs.Invalidf("expectedRevision", "must be omitted when creating a task")
		}
		req.ProjectID = projectID.String()
		if req.Triggers, err = p.inlineTriggers(in.Triggers); err != nil {
			return controlplane.Task{}, err
		}
		return publish(ctx, p, in.MutationID, mutationTaskCreate, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Task, error) {
			t, err := createTask(ctx, tx, projectID, in.Name, in.Enabled == nil || *in.Enabled, cs)
			if err != nil {
				return t, err
			}
			taskID, err := uuid.Parse(t.ID)
			if err != nil {
				return t, err
			}
			for i, tr := range req.Triggers {
				rec, err := createTrigger(ctx, tx, taskID, tr, p.allowDupes)
				if err != nil {
					return t, errs.Prefix(fmt.Sprintf("triggers[%d]", i), err)
				}
				t.Triggers = append(t.Triggers, rec)
			}
			return t, nil
		})
	}
	taskID, err := parsePubID("taskId", in.TaskID)
	if err != nil {
		return controlplane.Task{}, err
	}
	if len(in.Triggers) > 0 {
		return controlplane.Task{}, errs.Invalidf("triggers", "only when creating a task; publish triggers of an existing task one by one")
	}
	if in.ExpectedRevision < 1 {
		return controlplane.Task{}, errs.Invalidf("expectedRevision", "required: the revision this update replaces (>= 1)")
	}
	req.TaskID, req.ExpectedRevision = taskID.String(), in.ExpectedRevision
	if in.ProjectID != "" {
		if _, err := parsePubID("projectId", in.ProjectID); err != nil {
			return controlplane.Task{}, err
		}
		req.ProjectID = in.ProjectID
	}
	return publish(ctx, p, in.MutationID, mutationTaskUpdate, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Task, error) {
		return updateTask(ctx, tx, taskID, in, cs)
	})
}

// inlineTriggers validates the triggers of a task create; errors name
// triggers[i].<field>.
func (p *Publisher) inlineTriggers(in []controlplane.TriggerInput) ([]triggerRequest, error) {
	if len(in) > MaxInlineTriggers {
		return nil, errs.Invalidf("triggers", "at most %d, got %d", MaxInlineTriggers, len(in))
	}
	out := make([]triggerRequest, 0, len(in))
	for i, ti := range in {
		if ti.TaskID != "" || ti.TriggerID != "" || ti.ExpectedRevision != 0 || ti.MutationID != "" {
			return nil, errs.Invalidf(fmt.Sprintf("triggers[%d]", i), "a trigger created with its task has no ids, revision or mutation id")
		}
		r, err := p.normalizeTrigger(ti)
		if err != nil {
			return nil, errs.Prefix(fmt.Sprintf("triggers[%d]", i), err)
		}
		out = append(out, r)
	}
	return out, nil
}

func createTask(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, name string, enabled bool, cs compiledSpec) (controlplane.Task, error) {
	if _, err := lockPubProject(ctx, tx, projectID, true, "projectId"); err != nil {
		return controlplane.Task{}, err
	}
	if err := checkTaskNameFree(ctx, tx, projectID, name, uuid.Nil); err != nil {
		return controlplane.Task{}, err
	}
	taskID, err := controlplane.NewID()
	if err != nil {
		return controlplane.Task{}, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.tasks
		(task_id, project_id, name, enabled, head_revision, created_at_ms, updated_at_ms, search_text)
		VALUES ($1, $2, $3, $4, 1, `+dbNowMs+`, `+dbNowMs+`, $5)`, taskID, projectID, name, enabled, find.Text(name, cs.cmd, nil)); err != nil {
		return controlplane.Task{}, err
	}
	if _, err := insertTaskRevision(ctx, tx, projectID, taskID, 1, cs); err != nil {
		return controlplane.Task{}, err
	}
	return readTask(ctx, tx, taskID)
}

func updateTask(ctx context.Context, tx pgx.Tx, taskID uuid.UUID, in controlplane.TaskInput, cs compiledSpec) (controlplane.Task, error) {
	var projectID uuid.UUID
	var head int64
	var enabled bool
	var labels []string
	err := tx.QueryRow(ctx, `SELECT project_id, head_revision, enabled, labels FROM ql3.tasks WHERE task_id = $1 AND deleted_at_ms IS NULL FOR UPDATE`, taskID).
		Scan(&projectID, &head, &enabled, &labels)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Task{}, errs.NotFoundf("no task %s", taskID)
	}
	if err != nil {
		return controlplane.Task{}, err
	}
	if in.ProjectID != "" && in.ProjectID != projectID.String() {
		return controlplane.Task{}, errs.Invalidf("projectId", "a task cannot move to another project")
	}
	if head != in.ExpectedRevision {
		return controlplane.Task{}, errs.E(errs.Conflict, "expectedRevision", "task %s is at revision %d, not %d", taskID, head, in.ExpectedRevision)
	}
	if _, err := lockPubProject(ctx, tx, projectID, true, "projectId"); err != nil {
		return controlplane.Task{}, err
	}
	if err := checkTaskNameFree(ctx, tx, projectID, in.Name, taskID); err != nil {
		return controlplane.Task{}, err
	}
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	rev := head + 1
	er, err := insertTaskRevision(ctx, tx, projectID, taskID, rev, cs)
	if err != nil {
		return controlplane.Task{}, err
	}
	tag, err := tx.Exec(ctx, `UPDATE ql3.tasks SET name = $2, enabled = $3, head_revision = $4,
		updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`), search_text = $6
		WHERE task_id = $1 AND head_revision = $5`, taskID, in.Name, enabled, rev, head, find.Text(in.Name, cs.cmd, labels))
	if err != nil {
		return controlplane.Task{}, err
	}
	if err := expectAffected(tag, "task %s changed concurrently", taskID); err != nil {
		return controlplane.Task{}, err
	}
	// Every trigger follows the task: a new trigger revision pinned to the
	// new execution revision, its schedule reset and its claim invalidated.
	if err := repinTriggers(ctx, tx, taskID, rev, er, projectID); err != nil {
		return controlplane.Task{}, err
	}
	return readTask(ctx, tx, taskID)
}

// SetTaskEnabled switches a task on or off. Turning it off invalidates the
// claims on its schedules (a coordinator must re-check the task before it
// admits anything); its triggers keep their own enabled flag and fire again
// once the task is on. Setting the current value is a no-op.
func (p *Publisher) SetTaskEnabled(ctx context.Context, in controlplane.TaskEnabledInput) (controlplane.Task, error) {
	taskID, err := parsePubID("taskId", in.TaskID)
	if err != nil {
		return controlplane.Task{}, err
	}
	req := struct {
		TaskID  string `json:"taskId"`
		Enabled bool   `json:"enabled"`
	}{taskID.String(), in.Enabled}
	return publish(ctx, p, in.MutationID, mutationTaskEnable, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Task, error) {
		var projectID uuid.UUID
		var enabled bool
		err := tx.QueryRow(ctx, `SELECT project_id, enabled FROM ql3.tasks WHERE task_id = $1 AND deleted_at_ms IS NULL FOR UPDATE`, taskID).Scan(&projectID, &enabled)
		if errors.Is(err, pgx.ErrNoRows) {
			return controlplane.Task{}, errs.NotFoundf("no task %s", taskID)
		}
		if err != nil {
			return controlplane.Task{}, err
		}
		if enabled != in.Enabled {
			if in.Enabled {
				if _, err := lockPubProject(ctx, tx, projectID, true, "enabled"); err != nil {
					return controlplane.Task{}, err
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE ql3.tasks SET enabled = $2, updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`)
				WHERE task_id = $1`, taskID, in.Enabled); err != nil {
				return controlplane.Task{}, err
			}
			if _, err := tx.Exec(ctx, resetClaimsSQL+` WHERE trigger_id IN (SELECT trigger_id FROM ql3.triggers WHERE task_id = $1)`, taskID); err != nil {
				return controlplane.Task{}, err
			}
		}
		return readTask(ctx, tx, taskID)
	})
}

func checkTaskNameFree(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, name string, self uuid.UUID) error {
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.tasks WHERE project_id = $1 AND name = $2 AND task_id <> $3
		AND deleted_at_ms IS NULL)`,
		projectID, name, self).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return errs.E(errs.Conflict, "name", "project %s already has a task named %q", projectID, name)
	}
	return nil
}

// executionPin names one execution revision.
type executionPin struct {
	id     uuid.UUID
	digest canonjson.Digest
}

func insertTaskRevision(ctx context.Context, tx pgx.Tx, projectID, taskID uuid.UUID, rev int64, cs compiledSpec) (executionPin, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
		VALUES ($1, $2, $3, $4::text::jsonb, $5, `+dbNowMs+`)`,
		taskID, rev, projectID, string(cs.canonical), cs.digest[:]); err != nil {
		return executionPin{}, err
	}
	return insertExecutionRevision(ctx, tx, projectID, taskID, rev, cs)
}

// insertExecutionRevision compiles task revision rev into its execution
// revision (with the script tree it pins, for a script task).
func insertExecutionRevision(ctx context.Context, tx pgx.Tx, projectID, taskID uuid.UUID, rev int64, cs compiledSpec) (executionPin, error) {
	erID, err := controlplane.NewID()
	if err != nil {
		return executionPin{}, err
	}
	var placementArg any // NULL when the spec has no placement
	if cs.placement != nil {
		placementArg = string(cs.placement)
	}
	scriptDir, scriptTree, err := pinScriptTree(ctx, tx, projectID, cs.cmd)
	if err != nil {
		return executionPin{}, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.execution_revisions
		(execution_revision_id, project_id, task_id, task_revision, executor, spec_kind, canonical_spec, placement, digest, created_at_ms,
		 script_dir, script_tree)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9, `+dbNowMs+`, $10, $11)`,
		erID, projectID, taskID, rev, ExecutorRemoteWorker, cs.cmd.Kind, string(cs.canonical), placementArg, cs.digest[:],
		scriptDir, scriptTree); err != nil {
		return executionPin{}, err
	}
	return executionPin{id: erID, digest: cs.digest}, nil
}

const taskSelect = `SELECT t.task_id::text, t.project_id::text, t.name, t.enabled, t.head_revision,
	e.digest, e.execution_revision_id::text, e.canonical_spec, t.created_at_ms, t.updated_at_ms, coalesce(t.deleted_at_ms, 0), t.labels
	FROM ql3.tasks t
	JOIN ql3.execution_revisions e ON e.task_id = t.task_id AND e.task_revision = t.head_revision`

func scanTask(row pgx.Row) (controlplane.Task, error) {
	var t controlplane.Task
	var digest []byte
	var canonical string
	if err := row.Scan(&t.ID, &t.ProjectID, &t.Name, &t.Enabled, &t.Revision, &digest, &t.ExecutionRevisionID,
		&canonical, &t.CreatedAtMs, &t.UpdatedAtMs, &t.DeletedAtMs, &t.Labels); err != nil {
		return controlplane.Task{}, err
	}
	if len(t.Labels) == 0 {
		t.Labels = nil
	}
	var err error
	if t.Digest, err = fmtDigest(digest); err != nil {
		return controlplane.Task{}, err
	}
	if t.Spec, err = spec.Decode([]byte(canonical)); err != nil {
		return controlplane.Task{}, errs.E(errs.Internal, "", "stored spec of task %s does not decode: %v", t.ID, err)
	}
	return t, nil
}

func readTask(ctx context.Context, q postgres.DB, taskID uuid.UUID) (controlplane.Task, error) {
	t, err := scanTask(q.QueryRow(ctx, taskSelect+` WHERE t.task_id = $1`, taskID))
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Task{}, errs.NotFoundf("no task %s", taskID)
	}
	return t, err
}

// GetTask returns a task at its head revision.
func (p *Publisher) GetTask(ctx context.Context, id string) (controlplane.Task, error) {
	taskID, err := parsePubID("task", id)
	if err != nil {
		return controlplane.Task{}, errs.NotFoundf("no task %.64q", id)
	}
	t, err := readTask(ctx, p.db, taskID)
	if err == nil && t.DeletedAtMs != 0 {
		return controlplane.Task{}, errs.NotFoundf("no task %s (deleted)", taskID)
	}
	return t, pubReadErr(err)
}

// ListTasks returns a project's tasks (all tasks when projectID is "") in id
// order.
func (p *Publisher) ListTasks(ctx context.Context, projectID string, page controlplane.ListRequest) (controlplane.ListPage[controlplane.Task], error) {
	limit, after, err := normalizeList(page)
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, err
	}
	var proj *uuid.UUID
	if projectID != "" {
		id, err := parsePubID("project", projectID)
		if err != nil {
			return controlplane.ListPage[controlplane.Task]{}, err
		}
		proj = &id
	}
	rows, err := p.db.Query(ctx, taskSelect+`
		WHERE ($1::uuid IS NULL OR t.project_id = $1::uuid) AND ($2::uuid IS NULL OR t.task_id > $2::uuid)
		  AND t.deleted_at_ms IS NULL
		ORDER BY t.task_id LIMIT $3`, proj, after, limit+1)
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Task, error) { return scanTask(r) })
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, func(x controlplane.Task) string { return x.ID }), nil
}
