package publication

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

// normalizeList checks the limit and decodes an id cursor.
func normalizeList(r controlplane.ListRequest) (int, *uuid.UUID, error) {
	limit, err := r.PageLimit()
	if err != nil {
		return 0, nil, err
	}
	if r.Cursor == "" {
		return limit, nil, nil
	}
	id, err := parsePubID("cursor", r.Cursor)
	if err != nil {
		return 0, nil, errs.Invalidf("cursor", "not a cursor of this list")
	}
	return limit, &id, nil
}

// listPageOf trims a limit+1 query result to a page and sets its cursor.
func listPageOf[T any](items []T, limit int, key func(T) string) controlplane.ListPage[T] {
	p := controlplane.ListPage[T]{Items: items}
	if len(items) > limit {
		p.Items = items[:limit]
		p.NextCursor = key(items[limit-1])
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}

const runSelect = `SELECT run_id::text, project_id::text, task_id::text, task_revision, execution_revision_id::text,
	execution_digest, origin, coalesce(trigger_id::text, ''), coalesce(trigger_revision, 0), coalesce(rerun_of_run_id::text, ''),
	idempotency_key, scheduled_for_ms, priority, status, version, attempt_count, retry_max_attempts, not_before_ms,
	coalesce(cancel_requested_at_ms, 0), coalesce(error_class, ''), coalesce(error_message, ''), created_at_ms,
	updated_at_ms, coalesce(finished_at_ms, 0),
	(SELECT a.exit_code FROM ql3.attempts a WHERE a.run_id = ql3.runs.run_id ORDER BY a.attempt DESC LIMIT 1),
	random_delay_ms,
	(SELECT t.name FROM ql3.tasks t WHERE t.task_id = ql3.runs.task_id)
	FROM ql3.runs`

func scanRun(row pgx.Row) (controlplane.Run, error) {
	var r controlplane.Run
	var digest []byte
	if err := row.Scan(&r.ID, &r.ProjectID, &r.TaskID, &r.TaskRevision, &r.ExecutionRevisionID, &digest, &r.Origin,
		&r.TriggerID, &r.TriggerRevision, &r.RerunOf, &r.IdempotencyKey, &r.ScheduledForMs, &r.Priority, &r.Status,
		&r.Version, &r.AttemptCount, &r.MaxAttempts, &r.NotBeforeMs, &r.CancelRequestedAtMs, &r.ErrorClass,
		&r.ErrorMessage, &r.CreatedAtMs, &r.UpdatedAtMs, &r.FinishedAtMs, &r.ExitCode, &r.RandomDelayMs, &r.TaskName); err != nil {
		return controlplane.Run{}, err
	}
	var err error
	r.ExecutionDigest, err = fmtDigest(digest)
	return r, err
}

// runCursor is the keyset position (created_at_ms, run_id) of the last run
// of a page, encoded opaquely.
func encodeRunCursor(r controlplane.Run) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.CreatedAtMs, 10) + "/" + r.ID))
}

func decodeRunCursor(s string) (int64, uuid.UUID, error) {
	bad := errs.Invalidf("cursor", "not a cursor of this list")
	// One base64 text per byte string: Strict rejects non-zero trailing
	// bits, the re-encode check the \r and \n Go's decoder skips.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != s {
		return 0, uuid.UUID{}, bad
	}
	msText, idText, ok := strings.Cut(string(raw), "/")
	if !ok {
		return 0, uuid.UUID{}, bad
	}
	ms, err := strconv.ParseInt(msText, 10, 64)
	if err != nil || ms < 0 {
		return 0, uuid.UUID{}, bad
	}
	id, err := parsePubID("cursor", idText)
	if err != nil {
		return 0, uuid.UUID{}, bad
	}
	return ms, id, nil
}

var runStatuses = []string{"created", "queued", "dispatching", "running", "retry_wait", "lost",
	"succeeded", "failed", "cancelled", "timed_out"}

// ListRuns returns runs newest first, keyset-paginated on (created_at_ms,
// run_id) so a page never repeats or skips a run while new ones arrive.
func (p *Publisher) ListRuns(ctx context.Context, f controlplane.RunListFilter) (controlplane.ListPage[controlplane.Run], error) {
	limit, err := f.Page.PageLimit()
	if err != nil {
		return controlplane.ListPage[controlplane.Run]{}, err
	}
	var ids [3]*uuid.UUID
	for i, v := range []struct{ field, val string }{{"project", f.ProjectID}, {"task", f.TaskID}, {"trigger", f.TriggerID}} {
		if v.val == "" {
			continue
		}
		id, err := parsePubID(v.field, v.val)
		if err != nil {
			return controlplane.ListPage[controlplane.Run]{}, err
		}
		ids[i] = &id
	}
	for _, s := range f.Statuses {
		if !containsPubString(runStatuses, s) {
			return controlplane.ListPage[controlplane.Run]{}, errs.Invalidf("status", "unknown run status %.32q", s)
		}
	}
	var afterMs *int64
	var afterID *uuid.UUID
	if f.Page.Cursor != "" {
		ms, id, err := decodeRunCursor(f.Page.Cursor)
		if err != nil {
			return controlplane.ListPage[controlplane.Run]{}, err
		}
		afterMs, afterID = &ms, &id
	}
	var origin *string
	switch f.Origin {
	case "":
	case "cron", "manual", "rerun":
		origin = &f.Origin
	default:
		return controlplane.ListPage[controlplane.Run]{}, errs.Invalidf("origin", "must be cron, manual or rerun, got %.32q", f.Origin)
	}
	var statuses []string
	if len(f.Statuses) > 0 {
		statuses = f.Statuses
	}
	rows, err := p.db.Query(ctx, runSelect+`
		WHERE ($1::uuid IS NULL OR project_id = $1::uuid)
		  AND ($2::uuid IS NULL OR task_id = $2::uuid)
		  AND ($3::uuid IS NULL OR trigger_id = $3::uuid)
		  AND ($4::text[] IS NULL OR status = ANY ($4::text[]))
		  AND ($5::bigint IS NULL OR (created_at_ms, run_id) < ($5::bigint, $6::uuid))
		  AND ($8::text IS NULL OR origin = $8::text)
		ORDER BY created_at_ms DESC, run_id DESC LIMIT $7`,
		ids[0], ids[1], ids[2], statuses, afterMs, afterID, limit+1, origin)
	if err != nil {
		return controlplane.ListPage[controlplane.Run]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Run, error) { return scanRun(r) })
	if err != nil {
		return controlplane.ListPage[controlplane.Run]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, encodeRunCursor), nil
}

func containsPubString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// GetRun returns a run with its attempts.
func (p *Publisher) GetRun(ctx context.Context, id string) (controlplane.Run, error) {
	runID, err := parsePubID("run", id)
	if err != nil {
		return controlplane.Run{}, errs.NotFoundf("no run %.64q", id)
	}
	r, err := scanRun(p.db.QueryRow(ctx, runSelect+` WHERE run_id = $1`, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Run{}, errs.NotFoundf("no run %s", runID)
	}
	if err != nil {
		return controlplane.Run{}, pubReadErr(err)
	}
	rows, err := p.db.Query(ctx, `SELECT attempt_id::text, attempt, status, coalesce(worker_id::text, ''),
		coalesce(session_id::text, ''), exit_code, coalesce(error_class, ''), coalesce(error_message, ''),
		created_at_ms, coalesce(started_at_ms, 0), coalesce(finished_at_ms, 0), coalesce(masked_count, 0)
		FROM ql3.attempts WHERE run_id = $1 ORDER BY attempt`, runID)
	if err != nil {
		return controlplane.Run{}, pubReadErr(err)
	}
	r.Attempts, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (controlplane.Attempt, error) {
		var a controlplane.Attempt
		err := row.Scan(&a.ID, &a.Number, &a.Status, &a.WorkerID, &a.SessionID, &a.ExitCode, &a.ErrorClass,
			&a.Message, &a.CreatedAtMs, &a.StartedAtMs, &a.FinishedAtMs, &a.MaskedCount)
		return a, err
	})
	return r, pubReadErr(err)
}

// ListRunEvents returns a run's events with seq > afterSeq in order, at
// most limit (0: controlplane.DefaultListLimit). A missing run is not_found.
func (p *Publisher) ListRunEvents(ctx context.Context, id string, afterSeq int64, limit int) ([]controlplane.RunEvent, error) {
	runID, err := parsePubID("run", id)
	if err != nil {
		return nil, errs.NotFoundf("no run %.64q", id)
	}
	if limit, err = (controlplane.ListRequest{Limit: limit}).PageLimit(); err != nil {
		return nil, err
	}
	var exists bool
	if err := p.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.runs WHERE run_id = $1)`, runID).Scan(&exists); err != nil {
		return nil, pubReadErr(err)
	}
	if !exists {
		return nil, errs.NotFoundf("no run %s", runID)
	}
	rows, err := p.db.Query(ctx, `SELECT sequence, type, coalesce(attempt, 0), created_at_ms, payload::text
		FROM ql3.run_events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3`, runID, afterSeq, limit)
	if err != nil {
		return nil, pubReadErr(err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (controlplane.RunEvent, error) {
		var e controlplane.RunEvent
		var payload string
		err := row.Scan(&e.Seq, &e.Type, &e.Attempt, &e.AtMs, &payload)
		e.Payload = json.RawMessage(payload)
		return e, err
	})
	if err != nil {
		return nil, pubReadErr(err)
	}
	if events == nil {
		events = []controlplane.RunEvent{}
	}
	return events, nil
}
