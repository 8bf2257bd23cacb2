package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestIndependentCoordinatorsAdmitEachOccurrenceOnce runs 2 and then 3
// coordinators, each with its own pool (distinct backends and owners), over
// 300 every-second triggers for a 7 s window of database time (about 2,000
// occurrences per case), then checks that every occurrence has exactly one
// Run with one Attempt and two events, that no claim is left and that the
// only gaps between consecutive Runs of a trigger are the occurrences the
// coordinators counted as missed (none unless the box fell behind).
func TestIndependentCoordinatorsAdmitEachOccurrenceOnce(t *testing.T) {
	for _, replicas := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d_replicas", replicas), func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			trs := e.triggers(t, 300, "* * * * * *")
			var coords []*Coordinator
			pids := map[uint32]string{}
			for i := range replicas {
				pool := e.pool(t, fmt.Sprintf("coord-%d", i))
				c, _ := newCoord(t, pool, Config{Owner: fmt.Sprintf("replica-%d", i)})
				conn, err := pool.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pid := conn.Conn().PgConn().PID()
				conn.Release()
				if other, dup := pids[pid]; dup {
					t.Fatalf("replicas %s and %d share backend %d", other, i, pid)
				}
				pids[pid] = c.Owner()
				coords = append(coords, c)
			}
			start := e.dbNowMs(t)
			for _, c := range coords {
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
			}
			// The window is measured on the database clock.
			for e.dbNowMs(t) < start+7_000 {
				time.Sleep(100 * time.Millisecond)
			}
			for _, c := range coords {
				if err := c.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}
			runs := assertExactlyOnce(t, e.su)
			var missed, admitted, initialized int64
			owners := 0
			for _, c := range coords {
				m := c.Metrics()
				missed += m.Missed.Load()
				admitted += m.Admitted.Load()
				initialized += m.Initialized.Load()
				if m.Admitted.Load() > 0 {
					owners++
				}
				if m.Corrupt.Load() != 0 || m.Stale.Load() != 0 {
					t.Errorf("%s: %s", c.Owner(), metricsString(m))
				}
				t.Logf("%s: %s fire lag %v", c.Owner(), metricsString(m), lagSummary(m))
			}
			if admitted != runs || initialized != int64(len(trs)) {
				t.Fatalf("coordinators admitted %d and initialised %d; database has %d runs for %d triggers", admitted, initialized, runs, len(trs))
			}
			if runs < int64(len(trs))*5 {
				t.Fatalf("only %d runs in a 7 s window over %d every-second triggers", runs, len(trs))
			}
			if owners < 2 {
				t.Errorf("only %d replica(s) admitted anything: no evidence of concurrent admission", owners)
			}
			gaps := e.count(t, `SELECT coalesce(sum(g), 0) FROM (SELECT (scheduled_for_ms - lag(scheduled_for_ms)
				OVER (PARTITION BY trigger_id ORDER BY scheduled_for_ms)) / 1000 - 1 AS g FROM ql3.runs) x`)
			if gaps != missed {
				t.Fatalf("%d occurrences absent between runs, coordinators counted %d missed", gaps, missed)
			}
			t.Logf("%d replicas: %d runs over %d triggers, %d missed", replicas, runs, len(trs), missed)
		})
	}
}

func lagSummary(m *Metrics) string {
	b, n, _ := m.FireLag.Snapshot()
	return fmt.Sprintf("n=%d buckets(ms<=%v)=%v", n, FireLagBucketsMs, b)
}
