package publication

import (
	"context"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
)

var _ controlplane.Overviews = (*Publisher)(nil)

// Overview implements controlplane.Overviews: seven statements, each on an
// index (ADR 0057): the live-task index, runs by status, runs by finish
// time, the failures of the window, the due-schedule index and the
// workers' live sessions.
func (p *Publisher) Overview(ctx context.Context, projectID string) (controlplane.Overview, error) {
	// The project and the window are written into the statements as
	// literals (a parsed UUID, an integer): a prepared statement's generic
	// plan cannot see that "finished in the last 24 h" is a small range
	// of runs_finished_idx, nor drop "$1 IS NULL OR …", and scans every
	// run instead.
	var proj *uuid.UUID
	and := ""
	if projectID != "" {
		id, err := parsePubID("project", projectID)
		if err != nil {
			return controlplane.Overview{}, err
		}
		proj = &id
		and = ` AND project_id = '` + id.String() + `'::uuid`
	}
	o := controlplane.Overview{Runs: controlplane.OverviewRuns{Active: map[string]int64{}, Last24h: map[string]int64{}},
		Failures: controlplane.OverviewFailures{Recent: []controlplane.Run{}}, NextFires: []controlplane.NextFire{}}
	if err := p.db.QueryRow(ctx, `SELECT `+dbNowMs).Scan(&o.NowMs); err != nil {
		return o, pubReadErr(err)
	}
	o.SinceMs = o.NowMs - controlplane.OverviewWindowMs
	since := strconv.FormatInt(o.SinceMs, 10)
	if err := p.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE enabled) FROM ql3.tasks
		WHERE deleted_at_ms IS NULL AND ($1::uuid IS NULL OR project_id = $1::uuid)`, proj).Scan(&o.Tasks.Total, &o.Tasks.Enabled); err != nil {
		return o, pubReadErr(err)
	}
	o.Tasks.Disabled = o.Tasks.Total - o.Tasks.Enabled
	if err := countBy(ctx, p.db, o.Runs.Active, `SELECT status, count(*) FROM ql3.runs
		WHERE status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost')`+and+` GROUP BY status`); err != nil {
		return o, err
	}
	if err := countBy(ctx, p.db, o.Runs.Last24h, `SELECT status, count(*) FROM ql3.runs
		WHERE finished_at_ms > `+since+and+` GROUP BY status`); err != nil {
		return o, err
	}
	// lost runs have no finish time: the window counts them by their last change.
	if err := p.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM ql3.runs WHERE finished_at_ms > `+since+` AND status IN ('failed', 'timed_out')`+and+`) +
		(SELECT count(*) FROM ql3.runs WHERE status = 'lost' AND updated_at_ms > `+since+and+`)`).Scan(&o.Failures.Count); err != nil {
		return o, pubReadErr(err)
	}
	rows, err := p.db.Query(ctx, runSelect+`
		WHERE finished_at_ms > `+since+` AND status IN ('failed', 'timed_out')`+and+`
		ORDER BY finished_at_ms DESC, run_id DESC LIMIT $1`, controlplane.OverviewFailureRows)
	if err != nil {
		return o, pubReadErr(err)
	}
	if o.Failures.Recent, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Run, error) { return scanRun(r) }); err != nil {
		return o, pubReadErr(err)
	}
	rows, err = p.db.Query(ctx, `SELECT s.next_fire_at_ms, k.task_id::text, k.name, s.trigger_id::text, r.expression, r.time_zone
		FROM ql3.trigger_schedules s
		JOIN ql3.trigger_revisions r ON r.trigger_id = s.trigger_id AND r.revision = s.trigger_revision
		JOIN ql3.tasks k ON k.task_id = r.task_id
		WHERE s.active AND coalesce(s.next_fire_at_ms, -9223372036854775808) > $2 AND ($1::uuid IS NULL OR s.project_id = $1::uuid)
		ORDER BY coalesce(s.next_fire_at_ms, -9223372036854775808), s.project_id, s.trigger_id LIMIT $3`, proj, o.NowMs, controlplane.OverviewFireRows)
	if err != nil {
		return o, pubReadErr(err)
	}
	if o.NextFires, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.NextFire, error) {
		var f controlplane.NextFire
		err := r.Scan(&f.AtMs, &f.TaskID, &f.TaskName, &f.TriggerID, &f.Expression, &f.TimeZone)
		return f, err
	}); err != nil {
		return o, pubReadErr(err)
	}
	if err := p.db.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE EXISTS (SELECT 1 FROM ql3.worker_sessions s WHERE s.worker_id = w.worker_id
			AND s.status = 'online' AND s.lease_expires_at_ms > $1))
		FROM ql3.workers w WHERE w.status = 'active'`, o.NowMs).Scan(&o.Workers.Total, &o.Workers.Online); err != nil {
		return o, pubReadErr(err)
	}
	return o, nil
}

func countBy(ctx context.Context, db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, into map[string]int64, sql string, args ...any) error {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return pubReadErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return pubReadErr(err)
		}
		into[st] = n
	}
	return pubReadErr(rows.Err())
}
