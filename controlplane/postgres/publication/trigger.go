package publication

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
)

type triggerRequest struct {
	TaskID           string `json:"taskId,omitempty"`
	TriggerID        string `json:"triggerId,omitempty"`
	ExpectedRevision int64  `json:"expectedRevision,omitempty"`
	Name             string `json:"name,omitempty"`
	Expression       string `json:"expression"`
	TimeZone         string `json:"timeZone"`
	Misfire          string `json:"misfire"`
	GraceMs          int64  `json:"graceMs"`
	Enabled          bool   `json:"enabled"`
}

// normalizeTrigger validates in (zone, expression in that zone, policy,
// grace, name) and fills its defaults.
func (p *Publisher) normalizeTrigger(in controlplane.TriggerInput) (triggerRequest, error) {
	r := triggerRequest{Name: in.Name, Expression: in.Expression, TimeZone: in.TimeZone,
		Misfire: string(in.Misfire), GraceMs: p.defaultGraceMs, Enabled: in.Enabled == nil || *in.Enabled}
	if r.TimeZone == "" {
		r.TimeZone = "UTC"
	}
	if in.GraceMs != nil {
		r.GraceMs = *in.GraceMs
	}
	if r.Misfire == "" {
		r.Misfire = string(schedule.MisfireSkip)
	}
	if r.Expression == "" {
		return r, errs.Invalidf("expression", "required")
	}
	if len(r.TimeZone) > 64 || r.TimeZone == "Local" {
		return r, errs.Invalidf("timeZone", "must be an IANA time zone name such as \"Europe/Berlin\" or \"UTC\"")
	}
	loc, err := time.LoadLocation(r.TimeZone)
	if err != nil {
		return r, errs.Invalidf("timeZone", "unknown time zone %.64q", r.TimeZone)
	}
	sched, err := cron.Parse(r.Expression, loc)
	if err != nil {
		return r, err
	}
	r.Expression = sched.String()
	if !schedule.MisfirePolicy(r.Misfire).Valid() {
		return r, errs.Invalidf("misfire", "must be %q or %q, got %.32q", schedule.MisfireSkip, schedule.MisfireFireOnce, r.Misfire)
	}
	if r.GraceMs < 0 || r.GraceMs > schedule.MaxGraceMs {
		return r, errs.Invalidf("graceMs", "must be 0..%d, got %d", schedule.MaxGraceMs, r.GraceMs)
	}
	if r.Name != "" {
		if err := checkPubName("name", &r.Name); err != nil {
			return r, err
		}
	}
	return r, nil
}

// PublishTrigger creates or updates a trigger. The new revision pins the
// task's head revision and execution digest; the schedule row is upserted
// with the cursor and the claim cleared and state_version and claim_version
// bumped, so any claim taken before can never commit. An enabled trigger
// needs an active project and an enabled task.
func (p *Publisher) PublishTrigger(ctx context.Context, in controlplane.TriggerInput) (controlplane.Trigger, error) {
	req, err := p.normalizeTrigger(in)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	var taskID uuid.UUID
	if in.TaskID != "" || in.TriggerID == "" {
		if taskID, err = parsePubID("taskId", in.TaskID); err != nil {
			return controlplane.Trigger{}, err
		}
		req.TaskID = taskID.String()
	}
	if in.TriggerID == "" {
		if in.ExpectedRevision != 0 {
			return controlplane.Trigger{}, errs.Invalidf("expectedRevision", "must be omitted when creating a trigger")
		}
		return publish(ctx, p, in.MutationID, mutationTriggerCreate, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Trigger, error) {
			return createTrigger(ctx, tx, taskID, req, p.allowDupes)
		})
	}
	triggerID, err := parsePubID("triggerId", in.TriggerID)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if in.ExpectedRevision < 1 {
		return controlplane.Trigger{}, errs.Invalidf("expectedRevision", "required: the revision this update replaces (>= 1)")
	}
	req.TriggerID, req.ExpectedRevision = triggerID.String(), in.ExpectedRevision
	return publish(ctx, p, in.MutationID, mutationTriggerUpdate, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Trigger, error) {
		return updateTrigger(ctx, tx, triggerID, taskID, req, p.allowDupes)
	})
}

// taskHead is what a trigger revision pins.
type taskHead struct {
	projectID uuid.UUID
	revision  int64
	enabled   bool
	pin       executionPin
}

// lockTaskHead reads the task's head revision FOR SHARE, so a concurrent
// task publication waits for (or fails serialization against) this one.
func lockTaskHead(ctx context.Context, tx pgx.Tx, taskID uuid.UUID) (taskHead, error) {
	var h taskHead
	var digest []byte
	err := tx.QueryRow(ctx, `SELECT t.project_id, t.head_revision, t.enabled, e.execution_revision_id, e.digest
		FROM ql3.tasks t JOIN ql3.execution_revisions e ON e.task_id = t.task_id AND e.task_revision = t.head_revision
		WHERE t.task_id = $1 AND t.deleted_at_ms IS NULL FOR SHARE OF t`, taskID).Scan(&h.projectID, &h.revision, &h.enabled, &h.pin.id, &digest)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, errs.NotFoundf("no task %s", taskID)
	}
	if err != nil {
		return h, err
	}
	h.pin.digest, err = fmtDigest(digest)
	return h, err
}

// checkEnableAllowed refuses an enabled trigger for a disabled task or an
// archived project.
func checkEnableAllowed(ctx context.Context, tx pgx.Tx, h taskHead, taskID uuid.UUID, enabled bool) error {
	if _, err := lockPubProject(ctx, tx, h.projectID, enabled, "enabled"); err != nil {
		return err
	}
	if enabled && !h.enabled {
		return errs.E(errs.Conflict, "enabled", "task %s is disabled: its triggers cannot be enabled", taskID)
	}
	return nil
}

func createTrigger(ctx context.Context, tx pgx.Tx, taskID uuid.UUID, req triggerRequest, allowDupes bool) (controlplane.Trigger, error) {
	h, err := lockTaskHead(ctx, tx, taskID)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if err := checkEnableAllowed(ctx, tx, h, taskID, req.Enabled); err != nil {
		return controlplane.Trigger{}, err
	}
	id, err := controlplane.NewID()
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if req.Name == "" {
		req.Name = id.String()
	}
	if err := checkTriggerNameFree(ctx, tx, h.projectID, req.Name, uuid.Nil); err != nil {
		return controlplane.Trigger{}, err
	}
	if !allowDupes {
		if err := checkTriggerNotDuplicate(ctx, tx, taskID, req, uuid.Nil); err != nil {
			return controlplane.Trigger{}, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.triggers (trigger_id, project_id, task_id, name, head_revision, created_at_ms, updated_at_ms)
		VALUES ($1, $2, $3, $4, 1, `+dbNowMs+`, `+dbNowMs+`)`, id, h.projectID, taskID, req.Name); err != nil {
		return controlplane.Trigger{}, err
	}
	if err := writeTriggerRevision(ctx, tx, id, 1, taskID, h, req); err != nil {
		return controlplane.Trigger{}, err
	}
	return readTrigger(ctx, tx, id)
}

func updateTrigger(ctx context.Context, tx pgx.Tx, triggerID, wantTask uuid.UUID, req triggerRequest, allowDupes bool) (controlplane.Trigger, error) {
	var taskID uuid.UUID
	var head int64
	var name string
	err := tx.QueryRow(ctx, `SELECT task_id, head_revision, name FROM ql3.triggers WHERE trigger_id = $1 AND deleted_at_ms IS NULL FOR UPDATE`, triggerID).
		Scan(&taskID, &head, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Trigger{}, errs.NotFoundf("no trigger %s", triggerID)
	}
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if wantTask != uuid.Nil && wantTask != taskID {
		return controlplane.Trigger{}, errs.NotFoundf("task %s has no trigger %s", wantTask, triggerID)
	}
	if head != req.ExpectedRevision {
		return controlplane.Trigger{}, errs.E(errs.Conflict, "expectedRevision", "trigger %s is at revision %d, not %d", triggerID, head, req.ExpectedRevision)
	}
	h, err := lockTaskHead(ctx, tx, taskID)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if err := checkEnableAllowed(ctx, tx, h, taskID, req.Enabled); err != nil {
		return controlplane.Trigger{}, err
	}
	if req.Name == "" {
		req.Name = name
	}
	if err := checkTriggerNameFree(ctx, tx, h.projectID, req.Name, triggerID); err != nil {
		return controlplane.Trigger{}, err
	}
	if !allowDupes {
		if err := checkTriggerNotDuplicate(ctx, tx, taskID, req, triggerID); err != nil {
			return controlplane.Trigger{}, err
		}
	}
	tag, err := tx.Exec(ctx, `UPDATE ql3.triggers SET name = $2, head_revision = $3,
		updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`) WHERE trigger_id = $1 AND head_revision = $4`,
		triggerID, req.Name, head+1, head)
	if err != nil {
		return controlplane.Trigger{}, err
	}
	if err := expectAffected(tag, "trigger %s changed concurrently", triggerID); err != nil {
		return controlplane.Trigger{}, err
	}
	if err := writeTriggerRevision(ctx, tx, triggerID, head+1, taskID, h, req); err != nil {
		return controlplane.Trigger{}, err
	}
	return readTrigger(ctx, tx, triggerID)
}

// checkTriggerNotDuplicate refuses a trigger whose schedule (expression,
// white space collapsed, and zone) another trigger of the same task already
// has: two such triggers give two Runs per instant (ADR 0024).
func checkTriggerNotDuplicate(ctx context.Context, tx pgx.Tx, taskID uuid.UUID, req triggerRequest, self uuid.UUID) error {
	var other string
	err := tx.QueryRow(ctx, `SELECT t.trigger_id::text FROM ql3.triggers t
		JOIN ql3.trigger_revisions r ON r.trigger_id = t.trigger_id AND r.revision = t.head_revision
		WHERE t.task_id = $1 AND t.trigger_id <> $2 AND r.time_zone = $4
		  AND regexp_replace(r.expression, '\s+', ' ', 'g') = $3
		LIMIT 1`, taskID, self, strings.Join(strings.Fields(req.Expression), " "), req.TimeZone).Scan(&other)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return errs.E(errs.Conflict, "expression", "task %s already has trigger %s with this expression and time zone: it would run twice per instant", taskID, other)
}

func checkTriggerNameFree(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, name string, self uuid.UUID) error {
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.triggers WHERE project_id = $1 AND name = $2 AND trigger_id <> $3
		AND deleted_at_ms IS NULL)`,
		projectID, name, self).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return errs.E(errs.Conflict, "name", "project %s already has a trigger named %q", projectID, name)
	}
	return nil
}

// upsertScheduleSQL makes the schedule row point at the new revision with
// the cursor and the claim cleared, and active recomputed for it (the
// revision was inserted just before). On update both versions are bumped, so
// an UPDATE guarded by the previous fence (claim_token, claim_version or
// state_version) matches nothing. last_scheduled_at_ms is history and stays.
var upsertScheduleSQL = `INSERT INTO ql3.trigger_schedules
	(trigger_id, project_id, trigger_revision, next_fire_at_ms, state_version, claim_version, updated_at_ms, active)
	VALUES ($1, $2, $3, NULL, 1, 0, ` + dbNowMs + `, ` + scheduleActiveSQL("$1::uuid", "$3::bigint") + `)
	ON CONFLICT (trigger_id) DO UPDATE SET
		trigger_revision = EXCLUDED.trigger_revision,
		active = EXCLUDED.active,
		next_fire_at_ms = NULL,
		claim_owner = NULL, claim_token = NULL, claim_expires_at_ms = NULL,
		claim_version = ql3.trigger_schedules.claim_version + 1,
		state_version = ql3.trigger_schedules.state_version + 1,
		updated_at_ms = greatest(ql3.trigger_schedules.updated_at_ms, EXCLUDED.updated_at_ms)`

// writeTriggerRevision inserts revision rev of a trigger pinned to h and
// resets its schedule.
func writeTriggerRevision(ctx context.Context, tx pgx.Tx, triggerID uuid.UUID, rev int64, taskID uuid.UUID, h taskHead, req triggerRequest) error {
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.trigger_revisions
		(trigger_id, revision, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		 expression, time_zone, misfire_policy, misfire_grace_ms, enabled, activated_at_ms, created_at_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, `+dbNowMs+`, `+dbNowMs+`)`,
		triggerID, rev, h.projectID, taskID, h.revision, h.pin.id, h.pin.digest[:],
		req.Expression, req.TimeZone, req.Misfire, req.GraceMs, req.Enabled); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, upsertScheduleSQL, triggerID, h.projectID, rev)
	return err
}

// repinTriggers moves every trigger of a task onto its new head revision:
// a new trigger revision with unchanged settings each, schedule reset.
func repinTriggers(ctx context.Context, tx pgx.Tx, taskID uuid.UUID, taskRev int64, pin executionPin, projectID uuid.UUID) error {
	rows, err := tx.Query(ctx, `SELECT tr.trigger_id, tr.head_revision, r.expression, r.time_zone, r.misfire_policy, r.misfire_grace_ms, r.enabled
		FROM ql3.triggers tr JOIN ql3.trigger_revisions r ON r.trigger_id = tr.trigger_id AND r.revision = tr.head_revision
		WHERE tr.task_id = $1 AND tr.deleted_at_ms IS NULL ORDER BY tr.trigger_id FOR UPDATE OF tr`, taskID)
	if err != nil {
		return err
	}
	type head struct {
		id  uuid.UUID
		rev int64
		req triggerRequest
	}
	heads, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (head, error) {
		var h head
		err := r.Scan(&h.id, &h.rev, &h.req.Expression, &h.req.TimeZone, &h.req.Misfire, &h.req.GraceMs, &h.req.Enabled)
		return h, err
	})
	if err != nil {
		return err
	}
	th := taskHead{projectID: projectID, revision: taskRev, pin: pin}
	for _, h := range heads {
		if _, err := tx.Exec(ctx, `UPDATE ql3.triggers SET head_revision = $2, updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`)
			WHERE trigger_id = $1`, h.id, h.rev+1); err != nil {
			return err
		}
		if err := writeTriggerRevision(ctx, tx, h.id, h.rev+1, taskID, th, h.req); err != nil {
			return err
		}
	}
	return nil
}

const triggerSelect = `SELECT tr.trigger_id::text, tr.project_id::text, tr.task_id::text, tr.name, tr.head_revision,
	r.task_revision, r.execution_revision_id::text, r.execution_digest, r.expression, r.time_zone, r.misfire_policy,
	r.misfire_grace_ms, r.enabled, r.activated_at_ms, tr.created_at_ms, tr.updated_at_ms,
	s.trigger_revision, coalesce(s.next_fire_at_ms, 0), coalesce(s.last_scheduled_at_ms, 0), s.state_version,
	s.claim_version, s.claim_token IS NOT NULL, s.updated_at_ms, coalesce(tr.deleted_at_ms, 0)
	FROM ql3.triggers tr
	JOIN ql3.trigger_revisions r ON r.trigger_id = tr.trigger_id AND r.revision = tr.head_revision
	JOIN ql3.trigger_schedules s ON s.trigger_id = tr.trigger_id`

func scanTrigger(row pgx.Row) (controlplane.Trigger, error) {
	var t controlplane.Trigger
	var digest []byte
	s := &t.Schedule
	if err := row.Scan(&t.ID, &t.ProjectID, &t.TaskID, &t.Name, &t.Revision, &t.TaskRevision, &t.ExecutionRevisionID,
		&digest, &t.Expression, &t.TimeZone, &t.Misfire, &t.GraceMs, &t.Enabled, &t.ActivatedAtMs, &t.CreatedAtMs,
		&t.UpdatedAtMs, &s.TriggerRevision, &s.NextFireAtMs, &s.LastScheduledAtMs, &s.StateVersion, &s.ClaimVersion,
		&s.Claimed, &s.UpdatedAtMs, &t.DeletedAtMs); err != nil {
		return controlplane.Trigger{}, err
	}
	var err error
	t.ExecutionDigest, err = fmtDigest(digest)
	return t, err
}

func readTrigger(ctx context.Context, q postgres.DB, id uuid.UUID) (controlplane.Trigger, error) {
	t, err := scanTrigger(q.QueryRow(ctx, triggerSelect+` WHERE tr.trigger_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Trigger{}, errs.NotFoundf("no trigger %s", id)
	}
	return t, err
}

// GetTrigger returns a trigger at its head revision with its schedule.
func (p *Publisher) GetTrigger(ctx context.Context, id string) (controlplane.Trigger, error) {
	triggerID, err := parsePubID("trigger", id)
	if err != nil {
		return controlplane.Trigger{}, errs.NotFoundf("no trigger %.64q", id)
	}
	t, err := readTrigger(ctx, p.db, triggerID)
	if err == nil && t.DeletedAtMs != 0 {
		return controlplane.Trigger{}, errs.NotFoundf("no trigger %s (deleted)", triggerID)
	}
	return t, pubReadErr(err)
}

// ListTriggers returns the triggers of a task in id order.
func (p *Publisher) ListTriggers(ctx context.Context, taskID string, page controlplane.ListRequest) (controlplane.ListPage[controlplane.Trigger], error) {
	limit, after, err := normalizeList(page)
	if err != nil {
		return controlplane.ListPage[controlplane.Trigger]{}, err
	}
	tid, err := parsePubID("task", taskID)
	if err != nil {
		return controlplane.ListPage[controlplane.Trigger]{}, errs.NotFoundf("no task %.64q", taskID)
	}
	rows, err := p.db.Query(ctx, triggerSelect+` WHERE tr.task_id = $1 AND ($2::uuid IS NULL OR tr.trigger_id > $2::uuid)
		AND tr.deleted_at_ms IS NULL
		ORDER BY tr.trigger_id LIMIT $3`, tid, after, limit+1)
	if err != nil {
		return controlplane.ListPage[controlplane.Trigger]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Trigger, error) { return scanTrigger(r) })
	if err != nil {
		return controlplane.ListPage[controlplane.Trigger]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, func(x controlplane.Trigger) string { return x.ID }), nil
}
