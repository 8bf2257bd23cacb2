// Command sweepbench measures the lifecycle sweeper against one PostgreSQL
// database (scripts/bench/sweep.sh runs it; it is a benchmark, not a test):
//
//   - expired leases: it seeds N Runs under expired leases (unstarted:
//     requeue; started past the cancel grace: lost, then failed), then R
//     replicas (separate pools) sweep until nothing is left, and it reports
//     the wall time, leases/s, the ratio to the pgbench TPS given, and checks
//     from the database that every lease was handled exactly once;
//
//   - cancel latency: a fake worker renews its lease by heartbeat every H;
//     a cancel is requested at a random moment; it reports how long until a
//     renewal answered cancel (it must never exceed one heartbeat interval).
//
//     sweepbench -dsn 'host=/tmp/sock dbname=ql3bench user=postgres' \
//     -runtime-dsn 'host=/tmp/sock dbname=ql3bench user=ql3_runtime' -leases 10000 -replicas 2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/sweep"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

func main() {
	dsn := flag.String("dsn", "", "superuser DSN of the benchmark database")
	runtimeDSN := flag.String("runtime-dsn", "", "DSN the sweepers use (role ql3_runtime)")
	leases := flag.Int("leases", 10000, "expired leases to seed per case")
	replicas := flag.Int("replicas", 2, "independent sweepers")
	cases := flag.String("cases", "requeue,lost", "requeue (unstarted) and/or lost (started)")
	baseline := flag.Float64("baseline-tps", 0, "pgbench TPS to report ratios against")
	trials := flag.Int("cancel-trials", 10, "cancel latency trials (0: skip)")
	heartbeat := flag.Duration("heartbeat", time.Second, "fake worker heartbeat interval for the cancel trials")
	flag.Parse()
	if err := run(*dsn, *runtimeDSN, *leases, *replicas, *cases, *baseline, *trials, *heartbeat); err != nil {
		fmt.Fprintln(os.Stderr, "sweepbench:", err)
		os.Exit(1)
	}
}

type env struct {
	su                        *pgx.Conn
	taskID, workerID, session uuid.UUID
}

func run(dsn, runtimeDSN string, n, replicas int, cases string, baseline float64, trials int, heartbeat time.Duration) error {
	ctx := context.Background()
	if dsn == "" || runtimeDSN == "" {
		return errors.New("-dsn and -runtime-dsn are required")
	}
	su, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer su.Close(ctx)
	if _, err := postgres.Migrate(ctx, su, postgres.MigrateOptions{}); err != nil {
		return err
	}
	if err := postgres.EnableLogins(ctx, su, ""); err != nil {
		return err
	}
	e, err := setup(ctx, su, dsn)
	if err != nil {
		return err
	}
	fmt.Printf("| case | leases | replicas | wall s | leases/s | ratio to pgbench | skipped (locked) | handled once |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|\n")
	for _, c := range strings.Split(cases, ",") {
		if err := e.seed(ctx, c, n); err != nil {
			return err
		}
		wall, locked, err := sweepAll(ctx, runtimeDSN, replicas)
		if err != nil {
			return err
		}
		once, err := e.check(ctx, c, n)
		if err != nil {
			return err
		}
		rate := float64(n) / wall.Seconds()
		ratio := "-"
		if baseline > 0 {
			ratio = fmt.Sprintf("%.3f", rate/baseline)
		}
		fmt.Printf("| %s | %d | %d | %.2f | %.0f | %s | %d | %v |\n", c, n, replicas, wall.Seconds(), rate, ratio, locked, once)
	}
	if trials > 0 {
		return e.cancelLatency(ctx, runtimeDSN, trials, heartbeat)
	}
	return nil
}

func setup(ctx context.Context, su *pgx.Conn, dsn string) (env, error) {
	e := env{su: su, workerID: uuid.New(), session: uuid.New()}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return e, err
	}
	defer pool.Close()
	pub := publication.NewPublisher(pool, publication.PublisherOptions{})
	p, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: "sweepbench-" + e.workerID.String()[:8]})
	if err != nil {
		return e, err
	}
	t, err := pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: "t", Spec: spec.Command{
		Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "true"}, Concurrency: spec.ConcurrencyAllow}.WithDefaults()})
	if err != nil {
		return e, err
	}
	e.taskID = uuid.MustParse(t.ID)
	_, err = su.Exec(ctx, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms)
		VALUES ($1::uuid, 'bench-' || $1::uuid::text, 'active', 1, 1)`, e.workerID)
	if err != nil {
		return e, err
	}
	_, err = su.Exec(ctx, `INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT $1::uuid, $2::uuid, 1, 'online', 64, '{}', sha256('{}'), n, n + 86400000, n, n
		FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS n) x`, e.session, e.workerID)
	return e, err
}

// seed writes n Runs with their Attempt and an expired live lease, as
// dispatch leaves them: unstarted (requeue) or started past the grace (lost).
func (e env) seed(ctx context.Context, c string, n int) error {
	runStatus, attStatus, expiredBy := "dispatching", "claimed", int64(1000)
	if c == "lost" {
		runStatus, attStatus, expiredBy = "running", "running", 3600_000
	} else if c != "requeue" {
		return fmt.Errorf("unknown case %q", c)
	}
	_, err := e.su.Exec(ctx, `WITH n AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
	t AS (SELECT k.task_id, k.project_id, k.head_revision, e.execution_revision_id, e.digest
		FROM ql3.tasks k JOIN ql3.execution_revisions e ON e.task_id = k.task_id AND e.task_revision = k.head_revision
		WHERE k.task_id = $1),
	g AS (SELECT gen_random_uuid() AS run_id, gen_random_uuid() AS attempt_id, i FROM generate_series(1, $2::int) i),
	r AS (INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, idempotency_key, scheduled_for_ms, status, attempt_count, retry_max_attempts, retry_backoff_base_ms,
		retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms)
		SELECT g.run_id, t.project_id, t.task_id, t.head_revision, t.execution_revision_id, t.digest, 'manual',
			'bench:' || g.run_id::text, n.ms, $3::text, 1, 1, 0, 0, false, 60000, n.ms, n.ms, n.ms, n.ms
		FROM g, t, n RETURNING run_id, project_id),
	a AS (INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, worker_id, session_id,
		session_generation, offer_id, started_at_ms, created_at_ms, updated_at_ms)
		SELECT g.attempt_id, g.run_id, 1, t.project_id, $4::text, 'remote_worker', $5::uuid, $6::uuid, 1,
			'o-' || g.attempt_id::text, CASE WHEN $4::text <> 'claimed' THEN n.ms END, n.ms, n.ms
		FROM g, t, n JOIN r ON true WHERE r.run_id = g.run_id RETURNING attempt_id)
	INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
	SELECT gen_random_uuid(), g.run_id, g.attempt_id, 1, t.project_id, $5::uuid, $6::uuid, 1, 'o-' || g.attempt_id::text,
		sha256(g.attempt_id::text::bytea), 1, 'leased', n.ms - 7200000, n.ms - $7::bigint, n.ms - 7200000
	FROM g, t, n WHERE EXISTS (SELECT 1 FROM a WHERE a.attempt_id = g.attempt_id)`,
		e.taskID, n, runStatus, attStatus, e.workerID, e.session, expiredBy)
	if err != nil {
		return err
	}
	_, err = e.su.Exec(ctx, `ANALYZE ql3.runs; ANALYZE ql3.attempts; ANALYZE ql3.run_leases`)
	return err
}

// sweepAll runs replicas sweepers until none changes anything; wall is the
// time until the last change.
func sweepAll(ctx context.Context, runtimeDSN string, replicas int) (time.Duration, int, error) {
	pools := make([]*pgxpool.Pool, replicas)
	for i := range pools {
		p, err := pgxpool.New(ctx, runtimeDSN)
		if err != nil {
			return 0, 0, err
		}
		defer p.Close()
		if err := p.Ping(ctx); err != nil {
			return 0, 0, err
		}
		pools[i] = p
	}
	var mu sync.Mutex
	var firstErr error
	locked := 0
	var last time.Time
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := sweep.Sweep(ctx, p, controlplane.SweepOptions{DisableRetention: true})
				mu.Lock()
				locked += r.Locked
				if r.Changed() > 0 {
					last = time.Now()
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil || (r.Changed() == 0 && r.Locked == 0) {
					return
				}
			}
		}()
	}
	wg.Wait()
	return last.Sub(start), locked, firstErr
}

// check verifies every seeded lease was handled exactly once.
func (e env) check(ctx context.Context, c string, n int) (bool, error) {
	var live, once int
	err := e.su.QueryRow(ctx, `SELECT (SELECT count(*) FROM ql3.run_leases WHERE status = 'leased'),
		(SELECT count(*) FROM (SELECT run_id FROM ql3.run_events WHERE type = $1 GROUP BY run_id HAVING count(*) = 1) x)`,
		map[string]string{"requeue": "run.queued", "lost": "run.lost"}[c]).Scan(&live, &once)
	if err != nil {
		return false, err
	}
	// Clean up for the next case: no live leases, no in-flight Runs.
	if _, err := e.su.Exec(ctx, `TRUNCATE ql3.run_log_chunks, ql3.run_log_streams, ql3.run_leases, ql3.run_events,
		ql3.attempts, ql3.runs`); err != nil {
		return false, err
	}
	return live == 0 && once == n, nil
}

// cancelLatency: a fake worker renews its running Attempt every heartbeat;
// a cancel arrives at a random moment; the latency is until a renewal
// answers cancel.
func (e env) cancelLatency(ctx context.Context, runtimeDSN string, trials int, heartbeat time.Duration) error {
	pool, err := pgxpool.New(ctx, runtimeDSN)
	if err != nil {
		return err
	}
	defer pool.Close()
	d, err := dispatch.NewDispatcher(pool, dispatch.DispatchOptions{})
	if err != nil {
		return err
	}
	ops := runops.NewRunOps(pool)
	var lat []time.Duration
	for range trials {
		if err := e.seed(ctx, "requeue", 1); err != nil {
			return err
		}
		var runID, attemptID string
		if err := e.su.QueryRow(ctx, `UPDATE ql3.attempts SET status = 'running', started_at_ms = created_at_ms
			RETURNING run_id::text, attempt_id::text`).Scan(&runID, &attemptID); err != nil {
			return err
		}
		if _, err := e.su.Exec(ctx, `UPDATE ql3.runs SET status = 'running';
			UPDATE ql3.run_leases SET expires_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 45000`); err != nil {
			return err
		}
		p := controlplane.Principal{WorkerID: e.workerID.String()}
		requested := make(chan time.Time, 1)
		cancelAt := time.Duration(rand.Int64N(int64(heartbeat)))
		go func() {
			time.Sleep(cancelAt)
			at := time.Now()
			_, _ = ops.CancelRun(ctx, runID, "bench")
			requested <- at
		}()
		ticker := time.NewTicker(heartbeat)
		for range ticker.C {
			controls, err := d.RenewForHeartbeat(ctx, p, e.session.String(), 1, []string{attemptID})
			if err != nil {
				ticker.Stop()
				return err
			}
			if len(controls) == 1 && controls[0].Action == protocol.LeaseCancel {
				lat = append(lat, time.Since(<-requested))
				break
			}
		}
		ticker.Stop()
		if _, err := e.su.Exec(ctx, `TRUNCATE ql3.run_log_chunks, ql3.run_log_streams, ql3.run_leases, ql3.run_events,
			ql3.attempts, ql3.runs`); err != nil {
			return err
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("\ncancel → cancel control (heartbeat %v, %d trials): p50 %v, max %v (goal ≤ %v)\n",
		heartbeat, trials, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), heartbeat)
	return nil
}
