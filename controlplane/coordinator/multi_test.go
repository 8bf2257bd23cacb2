package coordinator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
)

// TestIndependentCoordinatorsAdmitEachOccurrenceOnce runs 2 and then 3
// coordinators, each with its own pool (distinct backends and owners), over
// 300 every-second triggers for a 7 s window of database time (about 2,000
// occurrences per case), then checks that every occurrence has exactly one
// Run with one Attempt and two events, that no claim is left and that the
// only gaps between consecutive Runs of a trigger are the occurrences the
// coordinators counted as missed (none unless the box fell behind),
// counting from each trigger's first cursor: an occurrence missed before a
// trigger's first Run (the box fell behind right after initialising it) is
// a miss too, though no earlier Run bounds it.
func TestIndependentCoordinatorsAdmitEachOccurrenceOnce(t *testing.T) {
	for _, replicas := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d_replicas", replicas), func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			trs := e.triggers(t, 300, "* * * * * *")
			var coords []*Coordinator
			pids := map[uint32]string{}
			// firstCursor is each trigger's cursor as first claimed after
			// its initialisation: the cursor only moves forward, so the
			// smallest one claimed is where its occurrences start.
			var cursorMu sync.Mutex
			firstCursor := map[string]int64{}
			recordCursors := func(cs []controlplane.ClaimedSchedule) {
				cursorMu.Lock()
				defer cursorMu.Unlock()
				for _, cl := range cs {
					id := cl.TriggerID.String()
					if first, ok := firstCursor[id]; cl.NextFireAtMs != 0 && (!ok || cl.NextFireAtMs < first) {
						firstCursor[id] = cl.NextFireAtMs
					}
				}
			}
			for i := range replicas {
				pool := e.pool(t, fmt.Sprintf("coord-%d", i))
				c, _ := newCoord(t, pool, Config{Owner: fmt.Sprintf("replica-%d", i)})
				c.testHookAfterClaim = recordCursors
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
			// Every trigger with a Run was claimed with its cursor set first.
			cursorMu.Lock()
			ids := make([]string, 0, len(firstCursor))
			cursors := make([]int64, 0, len(firstCursor))
			for id, ms := range firstCursor {
				ids, cursors = append(ids, id), append(cursors, ms)
			}
			cursorMu.Unlock()
			if n := e.count(t, `SELECT count(DISTINCT trigger_id) FROM ql3.runs WHERE trigger_id <> ALL($1::uuid[])`, ids); n != 0 {
				t.Fatalf("%d triggers have Runs but were never claimed with a cursor", n)
			}
			// Occurrences from the first cursor to the last Run without a
			// Run: leading ones (before a trigger's first Run) and gaps
			// between consecutive Runs.
			absent := e.count(t, `SELECT coalesce(sum((r.last - f.cursor) / 1000 + 1 - r.n), 0)
				FROM unnest($1::uuid[], $2::bigint[]) AS f(trigger_id, cursor)
				JOIN (SELECT trigger_id, max(scheduled_for_ms) AS last, count(*) AS n FROM ql3.runs GROUP BY 1) r USING (trigger_id)`,
				ids, cursors)
			if absent != missed {
				t.Fatalf("%d occurrences absent from the first cursor to the last Run, coordinators counted %d missed", absent, missed)
			}
			t.Logf("%d replicas: %d runs over %d triggers, %d missed", replicas, runs, len(trs), missed)
		})
	}
}

func lagSummary(m *Metrics) string {
	b, n, _ := m.FireLag.Snapshot()
	return fmt.Sprintf("n=%d buckets(ms<=%v)=%v", n, FireLagBucketsMs, b)
}
