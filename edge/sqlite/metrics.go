package sqlite

import (
	"context"
	"database/sql"
)

// RunGauges are the run counts /metrics reports, read in one snapshot.
type RunGauges struct {
	// ByStatus counts the Runs kept in each status (finished Runs until
	// retention prunes them).
	ByStatus map[string]int64
	// OldestQueuedCreatedMs is the creation time of the oldest Run waiting
	// in queued or retry_wait; 0 when none waits.
	OldestQueuedCreatedMs int64
}

// RunGauges reads the run counts by status (an index-only scan of
// runs_status_keyset) and the oldest waiting Run, on the reader pool.
func (s *Store) RunGauges(ctx context.Context) (RunGauges, error) {
	g := RunGauges{ByStatus: map[string]int64{}}
	rows, err := s.reader.QueryContext(ctx, `SELECT status, count(*) FROM runs GROUP BY status`)
	if err != nil {
		return g, err
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return g, err
		}
		g.ByStatus[st] = n
	}
	if err := rows.Err(); err != nil {
		return g, err
	}
	var oldest sql.NullInt64
	if err := s.reader.QueryRowContext(ctx, `SELECT min(created_at_ms) FROM runs WHERE status IN ('queued', 'retry_wait')`).Scan(&oldest); err != nil {
		return g, err
	}
	g.OldestQueuedCreatedMs = oldest.Int64
	return g, nil
}
