package postgres

import (
	"context"
	"fmt"
	"strings"
)

// Replication is what the primary says about its physical standbys, as far
// as ql3's unprivileged roles can see it. Exactly once across an unplanned
// failover needs every commit flushed on a standby before PostgreSQL
// acknowledges it: with asynchronous replication a promoted standby can
// lack a Run's completion that the worker already saw acknowledged, and
// the occurrence runs again (ADR 0033). ql3 cannot change that, but it
// can say so instead of leaving it to be found in a post-mortem.
type Replication struct {
	// Standbys counts walsenders streaming to a physical standby. A
	// logical walsender is bound to a database and is not counted:
	// nothing is promoted from it.
	Standbys int
	// SynchronousStandbyNames is the server's synchronous_standby_names.
	SynchronousStandbyNames string
	// SynchronousCommit is synchronous_commit as ql3's sessions run it
	// (database and role settings applied).
	SynchronousCommit string
}

// replicationSQL reads only what a role without pg_read_all_stats sees:
// such a role gets every walsender's row in pg_stat_replication (its pid,
// no details) and pg_stat_activity's datid for it, which is NULL for a
// physical walsender (it serves no database), and two settings any role
// may read. sync_state is hidden from it, so a synchronous_standby_names
// naming a standby that is not connected is not detected here (commits
// then wait, which shows).
const replicationSQL = `SELECT (SELECT count(*) FROM pg_stat_replication r
          JOIN pg_stat_activity a ON a.pid = r.pid WHERE a.datid IS NULL),
       current_setting('synchronous_standby_names'),
       current_setting('synchronous_commit')`

// ReadReplication reads Replication in one statement.
func ReadReplication(ctx context.Context, db DB) (Replication, error) {
	var r Replication
	var n int64
	if err := db.QueryRow(ctx, replicationSQL).Scan(&n, &r.SynchronousStandbyNames, &r.SynchronousCommit); err != nil {
		return Replication{}, fmt.Errorf("read replication settings: %w", Translate(err))
	}
	r.Standbys = int(n)
	return r, nil
}

// FailoverRisk says why promoting one of the standbys could lose
// acknowledged transitions (and run an occurrence twice), or "" when it
// cannot: no standby to fail over to, or every commit waits for one.
func (r Replication) FailoverRisk() string {
	if r.Standbys == 0 {
		return ""
	}
	if strings.TrimSpace(r.SynchronousStandbyNames) == "" {
		return fmt.Sprintf("%d streaming standby(s) and synchronous_standby_names is empty: commits do not wait for a standby, "+
			"so promoting one after a crash can lose acknowledged Run transitions and run an occurrence twice (ADR 0033)", r.Standbys)
	}
	switch r.SynchronousCommit {
	case "off", "local":
		return fmt.Sprintf("synchronous_commit = %s for ql3's sessions: commits do not wait for the synchronous standby, "+
			"so promoting it after a crash can lose acknowledged Run transitions and run an occurrence twice (ADR 0033)", r.SynchronousCommit)
	}
	return ""
}
