package coordinator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	pgschedule "github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is one test database with a publisher (ql3_admin), a superuser
// connection for inspection and one task to hang triggers on.
type env struct {
	db     *pgtest.DB
	pub    *publication.Publisher
	su     *pgx.Conn
	taskID string
}

func newEnv(t *testing.T) env { return newEnvOn(t, pgtest.NewDB(t)) }

func newEnvOn(t *testing.T, db *pgtest.DB) env {
	t.Helper()
	ctx := context.Background()
	e := env{db: db, pub: publication.NewPublisher(db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{AllowDuplicateTriggers: true}), su: db.Conn(t)}
	p, err := e.pub.PublishProject(ctx, controlplane.ProjectInput{Name: "coord"})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: "tick",
		// concurrency allow: these tests count one Run per occurrence of
		// many triggers of one task (forbid, the default, would skip them).
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "echo tick"},
			Concurrency: spec.ConcurrencyAllow}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	e.taskID = task.ID
	return e
}

type trig struct {
	ID       string
	Revision int64
}

func (e env) trigger(t *testing.T, expr, zone string, misfire schedule.MisfirePolicy) trig {
	t.Helper()
	tr, err := e.pub.PublishTrigger(context.Background(), controlplane.TriggerInput{TaskID: e.taskID, Expression: expr,
		TimeZone: zone, Misfire: misfire})
	if err != nil {
		t.Fatal(err)
	}
	return trig{ID: tr.ID, Revision: tr.Revision}
}

// triggers publishes n triggers concurrently (4 publishers).
func (e env) triggers(t *testing.T, n int, expr string) []trig {
	t.Helper()
	out := make([]trig, n)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				// Concurrent publishers on one task may exhaust the
				// publisher's own serialization retries; that is the
				// publisher's contract (unavailable, retry the request).
				var err error
				for range 5 {
					tr, perr := e.pub.PublishTrigger(context.Background(), controlplane.TriggerInput{TaskID: e.taskID,
						Expression: expr, TimeZone: "UTC", Misfire: schedule.MisfireSkip})
					if err = perr; err == nil {
						out[i] = trig{ID: tr.ID, Revision: tr.Revision}
					}
					if errs.Code(err) != errs.Unavailable {
						break
					}
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	return out
}

// runtimePool opens a separate ql3_runtime pool named app (its own
// backends, visible in pg_stat_activity), closed at the end of the test.
func runtimePool(t *testing.T, dsn, app string) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.NewPool(context.Background(), postgres.PoolConfig{DSN: dsn,
		ExpectRole: postgres.RoleRuntime, MaxConns: 4, ApplicationName: app})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func (e env) pool(t *testing.T, app string) *pgxpool.Pool {
	return runtimePool(t, e.db.DSN(postgres.RoleRuntime), app)
}

// diagnostics collects what a coordinator reports.
type diagnostics struct {
	mu  sync.Mutex
	all []Diagnostic
}

func (d *diagnostics) sink(x Diagnostic) {
	d.mu.Lock()
	d.all = append(d.all, x)
	d.mu.Unlock()
}

func (d *diagnostics) kinds() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := map[string]int{}
	for _, x := range d.all {
		m[x.Kind]++
	}
	return m
}

func newCoord(t *testing.T, pool *pgxpool.Pool, cfg Config) (*Coordinator, *diagnostics) {
	t.Helper()
	d := &diagnostics{}
	if cfg.Diagnostics == nil {
		cfg.Diagnostics = d.sink
	}
	c, err := New(pgschedule.NewScheduler(pool), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, d
}

func (e env) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.su.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e env) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.su.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// dbNowMs reads the database clock.
func (e env) dbNowMs(t *testing.T) int64 {
	return e.count(t, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
}

// assertExactlyOnce checks the invariants every fault test ends with and
// returns the number of Runs: no occurrence has two Runs, every Run has
// exactly one Attempt (claimed, pristine) and exactly two events
// (run.created 1, run.queued 2), and no claim is left held.
func assertExactlyOnce(t *testing.T, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) int64 {
	t.Helper()
	ctx := context.Background()
	var runs, dups, badAttempts, badEvents, claims int64
	if err := q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM ql3.runs),
		(SELECT count(*) FROM (SELECT 1 FROM ql3.runs GROUP BY trigger_id, trigger_revision, scheduled_for_ms HAVING count(*) > 1) d),
		(SELECT count(*) FROM ql3.runs r WHERE (SELECT count(*) FROM ql3.attempts a WHERE a.run_id = r.run_id
			AND a.attempt = 1 AND a.status = 'claimed' AND a.worker_id IS NULL AND a.offer_id IS NULL) <> 1
			OR (SELECT count(*) FROM ql3.attempts a WHERE a.run_id = r.run_id) <> 1),
		(SELECT count(*) FROM ql3.runs r WHERE (SELECT array_agg(type ORDER BY sequence) FROM ql3.run_events e WHERE e.run_id = r.run_id)
			IS DISTINCT FROM ARRAY['run.created', 'run.queued']),
		(SELECT count(*) FROM ql3.trigger_schedules WHERE claim_token IS NOT NULL)`).
		Scan(&runs, &dups, &badAttempts, &badEvents, &claims); err != nil {
		t.Fatal(err)
	}
	if dups != 0 || badAttempts != 0 || badEvents != 0 || claims != 0 {
		t.Fatalf("runs=%d duplicate occurrences=%d runs without exactly one pristine attempt=%d runs without exactly created+queued=%d claims held=%d",
			runs, dups, badAttempts, badEvents, claims)
	}
	return runs
}

// roundUntil runs rounds on c (tolerating round errors: faults are being
// injected) until cond holds, polling every 50 ms, for at most limit of
// real time (a deadline for a hung test, not an assertion on speed).
func roundUntil(t *testing.T, c *Coordinator, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached after %v of rounds (metrics %s)", limit, metricsString(c.Metrics()))
		}
		_, _ = c.Round(context.Background())
		time.Sleep(50 * time.Millisecond)
	}
}

func metricsString(m *Metrics) string {
	return fmt.Sprintf("claimed=%d admitted=%d skipped=%d init=%d raced=%d stale=%d corrupt=%d retries=%d admitErrors=%d commitUnknown=%d errors=%d",
		m.Claimed.Load(), m.Admitted.Load(), m.Skipped.Load(), m.Initialized.Load(), m.Raced.Load(), m.Stale.Load(),
		m.Corrupt.Load(), m.SerializationRetries.Load(), m.AdmitErrors.Load(), m.CommitUnknown.Load(), m.Errors.Load())
}
