package postgres

import (
	"context"
	"sync"
)

// ClusterGauges are the cluster-wide figures /metrics reports, read from
// the database at scrape time (every replica reports the same values).
type ClusterGauges struct {
	// ActiveRuns counts the Runs not yet finished, by status (created,
	// queued, dispatching, running, retry_wait, lost).
	ActiveRuns map[string]int64
	// OldestQueuedAgeMs is how long the oldest queued Run has waited since
	// it was queued (its creation when never held); 0 when none waits.
	OldestQueuedAgeMs int64
	// Sessions counts live worker sessions (not offline, lease not
	// expired) by status: online, draining.
	Sessions map[string]int64
	// Leases counts leases held by a worker right now.
	Leases int64
}

// ReadClusterGauges reads ClusterGauges in one read-only snapshot. The
// run counts use runs_in_flight_idx and runs_runnable_idx (partial
// indexes of unfinished Runs), so a scrape's cost follows the live work,
// not the history.
func ReadClusterGauges(ctx context.Context, db DB) (ClusterGauges, error) {
	g := ClusterGauges{ActiveRuns: map[string]int64{}, Sessions: map[string]int64{}}
	rows, err := db.Query(ctx, `SELECT status, count(*) FROM ql3.runs
        WHERE status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost') GROUP BY status`)
	if err != nil {
		return g, err
	}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return g, err
		}
		g.ActiveRuns[st] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return g, err
	}
	err = db.QueryRow(ctx, `WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
        SELECT coalesce((SELECT greatest(0, now.ms - min(coalesce(queued_at_ms, created_at_ms)))
                           FROM ql3.runs WHERE status = 'queued'), 0),
               (SELECT count(*) FROM ql3.run_leases WHERE status = 'leased')
          FROM now`).Scan(&g.OldestQueuedAgeMs, &g.Leases)
	if err != nil {
		return g, err
	}
	rows, err = db.Query(ctx, `SELECT status, count(*) FROM ql3.worker_sessions
        WHERE status <> 'offline' AND lease_expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
        GROUP BY status`)
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
		g.Sessions[st] = n
	}
	return g, rows.Err()
}

// FinishedRunsSettleMs is how far behind the database clock the finished
// Run counter reads: a transaction that stamped finished_at_ms commits a
// little later, and a window that moved past it would never count it.
const FinishedRunsSettleMs = 10_000

// FinishedRuns counts Runs reaching a terminal status (succeeded, failed,
// cancelled, timed_out) since the counter was created, by finished_at_ms
// windows on runs_finished_idx: each Add reads (last, now − settle] and
// moves last. Counts are cluster-wide (a Run finished by any replica or
// the sweeper); sum them across replicas with max(), not sum(). Safe for
// concurrent use.
type FinishedRuns struct {
	settleMs int64
	mu       sync.Mutex
	since    int64 // exclusive lower bound of the next window; 0 until the first read
	counts   map[string]int64
}

// NewFinishedRuns returns a counter that starts at the first Read;
// settleMs < 0 means FinishedRunsSettleMs.
func NewFinishedRuns(settleMs int64) *FinishedRuns {
	if settleMs < 0 {
		settleMs = FinishedRunsSettleMs
	}
	return &FinishedRuns{settleMs: settleMs, counts: map[string]int64{}}
}

// Read advances the window and returns the cumulative counts by status.
func (f *FinishedRuns) Read(ctx context.Context, db DB) (map[string]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var upto int64
	if err := db.QueryRow(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1`,
		f.settleMs).Scan(&upto); err != nil {
		return nil, err
	}
	if f.since == 0 {
		f.since = upto // count from now on: the history is not this process's to report
	}
	if upto > f.since {
		rows, err := db.Query(ctx, `SELECT status, count(*) FROM ql3.runs
            WHERE finished_at_ms > $1 AND finished_at_ms <= $2 GROUP BY status`, f.since, upto)
		if err != nil {
			return nil, err
		}
		add := map[string]int64{}
		for rows.Next() {
			var st string
			var n int64
			if err := rows.Scan(&st, &n); err != nil {
				rows.Close()
				return nil, err
			}
			add[st] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for st, n := range add {
			f.counts[st] += n
		}
		f.since = upto
	}
	out := make(map[string]int64, len(f.counts))
	for st, n := range f.counts {
		out[st] = n
	}
	return out, nil
}
