// Command admissionbench measures cluster admission throughput and fire lag
// against one PostgreSQL database (scripts/bench/admission.sh runs it; it is
// a benchmark, not a test). It migrates the database, seeds triggers firing
// every second, then for each case resets the schedules, runs N independent
// coordinators (separate pools) for a fixed window and reports, from the
// database: occurrences admitted per second after a warm-up, fire lag
// (Run created_at − scheduled_for, both database time) p50/p99, serialization
// retries per admission and duplicate occurrences (must be 0).
//
//	admissionbench -dsn 'host=/tmp/sock dbname=ql3bench user=postgres' -triggers 10000 \
//	    -cases 'batched:16:1,batched:16:2,per_occurrence:16:2' -window 30s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/coordinator"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/spec"
)

type benchCase struct {
	mode     coordinator.AdmissionMode
	budget   int
	replicas int
	triggers int
	page     int // 0: the coordinator's default (ADR 0066)
}

func parseCases(s string, defTriggers int) ([]benchCase, error) {
	var out []benchCase
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) < 3 || len(f) > 5 {
			return nil, fmt.Errorf("case %q: want mode:budget:replicas[:triggers[:page]]", part)
		}
		c := benchCase{mode: coordinator.AdmissionMode(f[0]), triggers: defTriggers}
		var err error
		if c.budget, err = strconv.Atoi(f[1]); err != nil {
			return nil, err
		}
		if c.replicas, err = strconv.Atoi(f[2]); err != nil {
			return nil, err
		}
		if len(f) >= 4 {
			if c.triggers, err = strconv.Atoi(f[3]); err != nil {
				return nil, err
			}
		}
		if len(f) == 5 {
			if c.page, err = strconv.Atoi(f[4]); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func main() {
	dsn := flag.String("dsn", "", "superuser DSN of the benchmark database")
	runtimeDSN := flag.String("runtime-dsn", "", "DSN the coordinators use (role ql3_runtime)")
	triggers := flag.Int("triggers", 10000, "triggers to seed (every second)")
	cases := flag.String("cases", "batched:16:1,batched:16:2", "mode:budget:replicas[:triggers[:page]],... (page = budget: no paging)")
	window := flag.Duration("window", 30*time.Second, "run time per case")
	warmup := flag.Duration("warmup", 5*time.Second, "excluded from the measurement at the start of a case")
	baseline := flag.Float64("baseline-tps", 0, "pgbench TPS to report ratios against")
	cpuProfile := flag.String("cpuprofile", "", "write the coordinators' CPU profile (Go side) to this file")
	setupSQL := flag.String("setup-sql", "", "statement run as the superuser after seeding (experiments: e.g. drop a constraint to see what it costs)")
	report := flag.String("report", "table", "table (markdown) or counts (one line per case: Runs admitted and serialization retries, as the coordinators counted them)")
	flag.Parse()
	if *report != "table" && *report != "counts" {
		fmt.Fprintln(os.Stderr, "admissionbench: -report must be table or counts")
		os.Exit(2)
	}
	countsOnly = *report == "counts"
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "admissionbench:", err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	afterSeedSQL = *setupSQL
	if err := run(*dsn, *runtimeDSN, *triggers, *cases, *window, *warmup, *baseline); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "admissionbench:", err)
		os.Exit(1)
	}
}

func run(dsn, runtimeDSN string, triggers int, casesFlag string, window, warmup time.Duration, baseline float64) error {
	ctx := context.Background()
	if dsn == "" || runtimeDSN == "" {
		return errors.New("-dsn and -runtime-dsn are required")
	}
	cases, err := parseCases(casesFlag, triggers)
	if err != nil {
		return err
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
	seedN := triggers
	for _, c := range cases {
		seedN = max(seedN, c.triggers)
	}
	if err := seed(ctx, su, dsn, seedN); err != nil {
		return err
	}
	if afterSeedSQL != "" {
		if _, err := su.Exec(ctx, afterSeedSQL); err != nil {
			return fmt.Errorf("-setup-sql: %w", err)
		}
	}
	if !countsOnly {
		fmt.Printf("| mode | budget | page | replicas | triggers | admitted/s | ratio to pgbench | retries/admission | fire lag p50 ms | p99 ms | missed | duplicates |\n")
		fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, c := range cases {
		r, err := runCase(ctx, su, runtimeDSN, c, window, warmup)
		if err != nil {
			return err
		}
		if r.duplicates != 0 {
			return fmt.Errorf("case %+v: %d duplicate occurrences", c, r.duplicates)
		}
		if countsOnly {
			fmt.Printf("%d %d\n", r.admitted, r.retries)
			continue
		}
		ratio := "-"
		if baseline > 0 {
			ratio = fmt.Sprintf("%.2f", r.rate/baseline)
		}
		page := "default"
		if c.page > 0 {
			page = strconv.Itoa(c.page)
		}
		fmt.Printf("| %s | %d | %s | %d | %d | %.0f | %s | %.3f | %.0f | %.0f | %d | %d |\n", c.mode, c.budget, page, c.replicas, c.triggers,
			r.rate, ratio, r.retriesPerAdmission, r.p50, r.p99, r.missed, r.duplicates)
	}
	return nil
}

// seed creates one project and task the real way (Publisher) and n
// every-second triggers on it in one bulk statement (publishing 10,000
// triggers one by one would dominate the run; the rows are exactly what
// PublishTrigger writes).
func seed(ctx context.Context, su *pgx.Conn, dsn string, n int) error {
	var have int
	if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.triggers`).Scan(&have); err != nil {
		return err
	}
	if have >= n {
		return nil
	}
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	pub := publication.NewPublisher(admin, publication.PublisherOptions{})
	p, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: fmt.Sprintf("bench-%d", time.Now().UnixNano())})
	if err != nil {
		return err
	}
	task, err := pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: "tick",
		// Concurrency allow: the benchmark's triggers stand for independent
		// jobs; under the default (forbid) one task's thousand triggers
		// would admit one queued Run a second and skip the rest.
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "true"},
			Concurrency: spec.ConcurrencyAllow}.WithDefaults()})
	if err != nil {
		return err
	}
	_, err = su.Exec(ctx, `WITH pin AS (
		SELECT e.execution_revision_id, e.task_revision, e.digest, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms
		FROM ql3.tasks t JOIN ql3.execution_revisions e ON e.task_id = t.task_id AND e.task_revision = t.head_revision
		WHERE t.task_id = $2::uuid
	), ids AS (
		SELECT gen_random_uuid() AS id, g FROM generate_series(1, $3::int) g
	), trg AS (
		INSERT INTO ql3.triggers (trigger_id, project_id, task_id, name, head_revision, created_at_ms, updated_at_ms)
		SELECT id, $1::uuid, $2::uuid, 'bench-' || g, 1, pin.now_ms, pin.now_ms FROM ids, pin RETURNING trigger_id
	), rev AS (
		INSERT INTO ql3.trigger_revisions (trigger_id, revision, project_id, task_id, task_revision, execution_revision_id,
			execution_digest, expression, time_zone, misfire_policy, misfire_grace_ms, enabled, activated_at_ms, created_at_ms)
		SELECT trigger_id, 1, $1::uuid, $2::uuid, pin.task_revision, pin.execution_revision_id, pin.digest,
			'* * * * * *', 'UTC', 'skip', 30000, true, pin.now_ms, pin.now_ms FROM trg, pin RETURNING trigger_id
	)
	INSERT INTO ql3.trigger_schedules (trigger_id, project_id, trigger_revision, state_version, claim_version, updated_at_ms)
	SELECT trigger_id, $1::uuid, 1, 1, 0, pin.now_ms FROM rev, pin`, p.ID, task.ID, n-have)
	return err
}

type caseResult struct {
	rate, p50, p99, retriesPerAdmission   float64
	missed, duplicates, admitted, retries int64
}

// countsOnly: -report counts; afterSeedSQL: -setup-sql.
var (
	countsOnly   bool
	afterSeedSQL string
)

func reset(ctx context.Context, su *pgx.Conn, triggers int) error {
	for _, stmt := range []string{
		// CASCADE: every table that hangs off Runs and Attempts (attempt
		// envs, and whatever a later migration adds) is emptied with them.
		`TRUNCATE ql3.run_events, ql3.run_log_chunks, ql3.run_log_streams, ql3.run_leases, ql3.attempts, ql3.runs CASCADE`,
		fmt.Sprintf(`UPDATE ql3.trigger_revisions r SET enabled = x.rn <= %d
			FROM (SELECT trigger_id, row_number() OVER (ORDER BY trigger_id) AS rn FROM ql3.trigger_revisions) x
			WHERE x.trigger_id = r.trigger_id`, triggers),
		// Every schedule starts uninitialised (cursor NULL). The revisions
		// were switched above without publication, so active is written here
		// the way publication writes it (migration 0004): the disabled rows
		// leave the claim's due index although their cursor is NULL.
		`UPDATE ql3.trigger_schedules s SET
			next_fire_at_ms = NULL, last_scheduled_at_ms = NULL, active = r.enabled,
			claim_owner = NULL, claim_token = NULL, claim_expires_at_ms = NULL,
			claim_version = s.claim_version + 1, state_version = s.state_version + 1
			FROM ql3.trigger_revisions r WHERE r.trigger_id = s.trigger_id AND r.revision = s.trigger_revision`,
		// Not ql3.runs, attempts or run_events: an ANALYZE of an empty table
		// records "known empty", and the foreign-key checks that reference
		// runs would keep a sequential-scan plan for the whole case (after
		// TRUNCATE the size is "unknown" and the planner uses the index).
		`VACUUM ANALYZE ql3.trigger_schedules`, `VACUUM ANALYZE ql3.trigger_revisions`, `CHECKPOINT`,
	} {
		if _, err := su.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

func runCase(ctx context.Context, su *pgx.Conn, runtimeDSN string, c benchCase, window, warmup time.Duration) (caseResult, error) {
	var r caseResult
	if err := reset(ctx, su, c.triggers); err != nil {
		return r, err
	}
	var coords []*coordinator.Coordinator
	var pools []*pgxpool.Pool
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var diagMu sync.Mutex
	diags := map[string]int{}
	for i := range c.replicas {
		pool, err := postgres.NewPool(ctx, postgres.PoolConfig{DSN: runtimeDSN, ExpectRole: postgres.RoleRuntime,
			MaxConns: 4, ApplicationName: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			return r, err
		}
		pools = append(pools, pool)
		co, err := coordinator.New(schedule.NewScheduler(pool), coordinator.Config{Owner: fmt.Sprintf("bench-%d", i), Budget: c.budget, Page: c.page,
			Admission: c.mode, Diagnostics: func(d coordinator.Diagnostic) {
				diagMu.Lock()
				diags[d.Kind]++
				diagMu.Unlock()
				coordinator.SlogSink(quiet)(d)
			}})
		if err != nil {
			return r, err
		}
		coords = append(coords, co)
	}
	var start int64
	if err := su.QueryRow(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`).Scan(&start); err != nil {
		return r, err
	}
	for _, co := range coords {
		if err := co.Start(); err != nil {
			return r, err
		}
	}
	time.Sleep(window)
	// The window ends before the coordinators stop: what Stop costs (it
	// drains a round; it once also waited 2 s per idle LISTEN connection)
	// is not admission time, and Runs created after end are not counted.
	var end int64
	if err := su.QueryRow(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`).Scan(&end); err != nil {
		return r, err
	}
	stopStart := time.Now()
	for _, co := range coords {
		if err := co.Stop(ctx); err != nil {
			return r, err
		}
	}
	fmt.Fprintf(os.Stderr, "case %s:%d:%d:%d: stopping %d coordinators took %v (not in the window)\n",
		c.mode, c.budget, c.replicas, c.triggers, len(coords), time.Since(stopStart).Round(time.Millisecond))
	from := start + warmup.Milliseconds()
	var n int64
	var p50, p99 *float64
	if err := su.QueryRow(ctx, `SELECT count(*),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY created_at_ms - scheduled_for_ms),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY created_at_ms - scheduled_for_ms)
		FROM ql3.runs WHERE created_at_ms >= $1::bigint AND created_at_ms < $2::bigint`, from, end).Scan(&n, &p50, &p99); err != nil {
		return r, err
	}
	if err := su.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM ql3.runs GROUP BY trigger_id, trigger_revision, scheduled_for_ms
		HAVING count(*) > 1) d`).Scan(&r.duplicates); err != nil {
		return r, err
	}
	r.rate = float64(n) / (float64(end-from) / 1000)
	if p50 != nil {
		r.p50, r.p99 = *p50, *p99
	}
	var admitted, retries int64
	for _, co := range coords {
		m := co.Metrics()
		admitted += m.Admitted.Load()
		retries += m.SerializationRetries.Load()
		r.missed += m.Missed.Load()
	}
	r.admitted, r.retries = admitted, retries
	if admitted > 0 {
		r.retriesPerAdmission = float64(retries) / float64(admitted)
	}
	if len(diags) > 0 {
		fmt.Fprintf(os.Stderr, "case %+v diagnostics: %v\n", c, diags)
	}
	return r, nil
}
