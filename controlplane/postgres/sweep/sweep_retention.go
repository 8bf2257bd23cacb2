package sweep

import (
	"context"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
)

// Retention (ADR 0016): the last step of every sweep pass deletes, oldest
// first and in bounded pages (one transaction per page; Runs are chosen
// with SKIP LOCKED so replicas never wait on each other's pages; chunks and
// audit rows cannot be row-locked by the runtime role, which has no UPDATE
// on them, so a replica deleting the same page second waits for the first
// and deletes nothing):
//
//   - log chunks of finished Runs older than LogRetention (the bulk of the
//     bytes; the Run's history stays readable, its log reads as empty);
//   - finished Runs older than RunRetention, with their attempts, events,
//     leases, log streams and chunks (a Run that a kept rerun points at
//     stays until that rerun goes);
//   - audit rows older than AuditRetention.

// retentionLogSQL deletes one page of log chunks of finished Runs whose
// chunk is older than the cutoff ($1 ms before database now).
// retentionPage bounds the rows of one retention transaction: Runs (each
// with its children), or chunks and audit rows.
const (
	retentionRunPage  = 64
	retentionRowsPage = 256
)

const retentionLogSQL = `WITH victims AS (
	SELECT c.ctid AS tid FROM ql3.run_log_chunks c JOIN ql3.runs r ON r.run_id = c.run_id
	WHERE c.created_at_ms < ` + postgres.DBNowMs + ` - $1::bigint AND r.finished_at_ms IS NOT NULL
	ORDER BY c.created_at_ms LIMIT $2::int
)
DELETE FROM ql3.run_log_chunks c USING victims v WHERE c.ctid = v.tid`

// retentionRunSQL deletes one page of Runs finished before the cutoff with
// every row that belongs to them, children first in one statement (the
// foreign keys are checked at its end). Leases are reached through the
// Runs' Attempts (migration 0011 dropped the lease index by run; every
// lease names its attempt, and the sibling CTEs read the statement's
// snapshot, so the attempts delete does not hide them).
const retentionRunSQL = `WITH victims AS MATERIALIZED (
	SELECT r.run_id FROM ql3.runs r
	WHERE r.finished_at_ms < ` + postgres.DBNowMs + ` - $1::bigint
	  AND NOT EXISTS (SELECT 1 FROM ql3.runs x WHERE x.rerun_of_run_id = r.run_id)
	ORDER BY r.finished_at_ms, r.run_id LIMIT $2::int FOR UPDATE OF r SKIP LOCKED
), chunks AS (
	DELETE FROM ql3.run_log_chunks c USING victims v WHERE c.run_id = v.run_id RETURNING 1
), streams AS (
	DELETE FROM ql3.run_log_streams s USING victims v WHERE s.run_id = v.run_id RETURNING 1
), leases AS (
	DELETE FROM ql3.run_leases l USING victims v JOIN ql3.attempts a ON a.run_id = v.run_id
	WHERE l.attempt_id = a.attempt_id RETURNING 1
), events AS (
	DELETE FROM ql3.run_events e USING victims v WHERE e.run_id = v.run_id RETURNING 1
), attempts AS (
	DELETE FROM ql3.attempts a USING victims v WHERE a.run_id = v.run_id RETURNING 1
), runs AS (
	DELETE FROM ql3.runs r USING victims v WHERE r.run_id = v.run_id RETURNING 1
)
SELECT (SELECT count(*) FROM runs) + 0 * ((SELECT count(*) FROM chunks) + (SELECT count(*) FROM streams)
	+ (SELECT count(*) FROM leases) + (SELECT count(*) FROM events) + (SELECT count(*) FROM attempts))`

// retentionAuditSQL deletes one page of audit rows older than the cutoff
// (audit_log_at_idx).
const retentionAuditSQL = `WITH victims AS (
	SELECT audit_id FROM ql3.audit_log WHERE at_ms < ` + postgres.DBNowMs + ` - $1::bigint
	ORDER BY at_ms, audit_id LIMIT $2::int
)
DELETE FROM ql3.audit_log a USING victims v WHERE a.audit_id = v.audit_id`

// retentionScriptBlobSQL deletes one page of script blobs (ADR 0052) that
// no entry of a scripts folder and no pinned script tree names, and that
// are older than $1 ms (a grace: a blob is always written in the
// transaction that first names it, the grace only spares the page a
// writer racing it for the same content).
const retentionScriptBlobSQL = `WITH victims AS (
	SELECT b.project_id, b.sha256 FROM ql3.script_blobs b
	WHERE b.created_at_ms < ` + postgres.DBNowMs + ` - $1::bigint
	  AND NOT EXISTS (SELECT 1 FROM ql3.script_entries e WHERE e.project_id = b.project_id AND e.sha256 = b.sha256)
	  AND NOT EXISTS (SELECT 1 FROM ql3.script_tree_files t WHERE t.project_id = b.project_id AND t.sha256 = b.sha256)
	ORDER BY b.created_at_ms LIMIT $2::int
)
DELETE FROM ql3.script_blobs b USING victims v WHERE b.project_id = v.project_id AND b.sha256 = v.sha256`

// scriptBlobGrace is how old an unreferenced script blob is before
// retention deletes it.
const scriptBlobGrace = 10 * time.Minute

// sweepRetention runs the deletions, each up to o.MaxPages pages.
func sweepRetention(ctx context.Context, db postgres.Acquirer, o controlplane.SweepOptions) (controlplane.RetentionReport, bool, error) {
	var rep controlplane.RetentionReport
	more := false
	steps := []struct {
		sql   string
		age   time.Duration
		page  int
		count *int
		rows  bool // the statement returns a count row (runs) instead of a tag
	}{
		{retentionLogSQL, o.LogRetention, retentionRowsPage, &rep.LogChunks, false},
		{retentionRunSQL, o.RunRetention, retentionRunPage, &rep.Runs, true},
		{retentionAuditSQL, o.AuditRetention, retentionRowsPage, &rep.AuditRows, false},
		{retentionScriptBlobSQL, scriptBlobGrace, retentionRowsPage, &rep.ScriptBlobs, false},
	}
	for _, s := range steps {
		full := true
		for range o.MaxPages {
			n, err := retentionPage(ctx, db, s.sql, s.age.Milliseconds(), s.page, s.rows)
			*s.count += n
			if err != nil {
				return rep, more, err
			}
			if n < s.page {
				full = false
				break
			}
		}
		more = more || full
	}
	return rep, more, nil
}

func retentionPage(ctx context.Context, db postgres.Acquirer, sql string, ageMs int64, page int, rows bool) (int, error) {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return 0, postgres.Translate(err)
	}
	defer conn.Release()
	if rows {
		var n int64
		if err := conn.QueryRow(ctx, sql, ageMs, page).Scan(&n); err != nil {
			return 0, postgres.Translate(err)
		}
		return int(n), nil
	}
	tag, err := conn.Exec(ctx, sql, ageMs, page)
	if err != nil {
		return 0, postgres.Translate(err)
	}
	return int(tag.RowsAffected()), nil
}
