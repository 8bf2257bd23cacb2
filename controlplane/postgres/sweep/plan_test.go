package sweep_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/controlplane/postgres/sweep"
)

// TestSweepTimeoutScanFitsItsIndex: the sweeper's own timeout scan
// (migration 0008's predicate) is served by attempts_deadline_idx without a
// sort (from TestClaimAndDiscoveryIndexesFit in postgres).
func TestSweepTimeoutScanFitsItsIndex(t *testing.T) {
	t.Parallel()
	conn := pgtest.NewDB(t).Conn(t)
	pgfixture.CheckIndexFits(t, conn, strings.Replace(sweep.SweepTimeoutCandidatesSQL, "$1::int", "64", 1), "attempts_deadline_idx")
}

// TestSweepLeaseScanGatesTheSessionBranch: the lease scan's session branch
// runs only when some session is offline or expired (a one-time filter);
// ungated, it walked every expired lease and filtered by session, 25 ms a
// page with 7,000 expired leases.
func TestSweepLeaseScanGatesTheSessionBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.NewDB(t).Conn(t)
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	q := strings.NewReplacer("$1::bigint", "10000", "$2::int", "64", "$3::bigint", "3600000").
		Replace(sweep.SweepLeaseCandidatesSQL)
	rows, err := conn.Query(ctx, "EXPLAIN "+q)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "One-Time Filter") {
		t.Errorf("the session branch is not gated by a one-time filter:\n%s", plan)
	}
}
