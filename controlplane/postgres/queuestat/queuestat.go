// Package queuestat reads the Run queue's depth and age per project and
// priority (issue 28 point 5, ADR 0066): what /metrics and the /readyz
// overload detail report. It implements controlplane.QueueReader.
package queuestat

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
)

// Reader is controlplane.QueueReader over a pool (the admin pool in the
// app).
type Reader struct{ db postgres.DB }

// New returns the reader over db.
func New(db postgres.DB) *Reader { return &Reader{db: db} }

var _ controlplane.QueueReader = (*Reader)(nil)

// queueSQL groups the queued Runs by project and priority in one
// statement (runs_runnable_idx is partial on status = 'queued', so the
// read follows the queue, not the history). A Run waits from when it was
// queued (its creation when it was never held) or, when a random delay
// (ADR 0045) holds it back, from when it became eligible: a delay the
// task asked for is not the workers' backlog. The window totals are taken
// before the LIMIT, so they cover every group. Time is the database's.
var queueSQL = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
q AS (
	SELECT r.project_id, r.priority, count(*) AS depth,
		min(greatest(coalesce(r.queued_at_ms, r.created_at_ms), r.not_before_ms)) AS since
	FROM ql3.runs r
	WHERE r.status = 'queued'
	GROUP BY r.project_id, r.priority)
SELECT q.project_id, q.priority, q.depth, greatest(0, n.ms - q.since), count(*) OVER (), sum(q.depth) OVER ()
FROM q CROSS JOIN n
ORDER BY q.since, q.priority DESC, q.project_id
LIMIT ` + strconv.Itoa(controlplane.MaxQueueGroups)

// ReadQueue reads the queue in one snapshot: the totals, and the groups
// oldest first (at most controlplane.MaxQueueGroups).
func (r *Reader) ReadQueue(ctx context.Context) (controlplane.QueueReport, error) {
	var rep controlplane.QueueReport
	rows, err := r.db.Query(ctx, queueSQL)
	if err != nil {
		return rep, postgres.Translate(err)
	}
	defer rows.Close()
	var groups int64
	for rows.Next() {
		var g controlplane.QueueGroup
		var id uuid.UUID
		if err := rows.Scan(&id, &g.Priority, &g.Depth, &g.OldestAgeMs, &groups, &rep.Depth); err != nil {
			return rep, postgres.Translate(err)
		}
		g.ProjectID = id
		if len(rep.Groups) == 0 {
			rep.OldestAgeMs = g.OldestAgeMs
		}
		rep.Groups = append(rep.Groups, g)
	}
	if err := rows.Err(); err != nil {
		return rep, postgres.Translate(err)
	}
	rep.Truncated = groups > int64(len(rep.Groups))
	return rep, nil
}
