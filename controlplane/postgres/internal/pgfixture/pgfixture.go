// Package pgfixture holds the PostgreSQL adapter's shared test fixtures:
// one test database with a published project and task (Sched), plus a worker
// and a live session and Runs, Attempts and leases written in any state the
// way admission and dispatch would have left them (Life). Tests only: no
// production package imports it.
package pgfixture

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/controlplane/postgres/sweep"
	"github.com/ql3/ql3/core/cron"
	coresched "github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
)

// Sched: one database, an admin publisher, a runtime pool (the
// coordinator's role) and a superuser connection to inspect and tamper.
type Sched struct {
	DB        *pgtest.DB
	Pub       *publication.Publisher
	Runtime   *pgxpool.Pool
	SU        *pgx.Conn
	ProjectID string
	TaskID    string
}

// SchedTrigger is what the tests need of a published trigger.
type SchedTrigger struct {
	ID       string
	Revision int64
}

func NewSched(t *testing.T) Sched {
	t.Helper()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	f := Sched{DB: db, Pub: publication.NewPublisher(db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{AllowDuplicateTriggers: true}),
		Runtime: db.Pool(t, postgres.RoleRuntime), SU: db.Conn(t)}
	project, err := f.Pub.PublishProject(ctx, controlplane.ProjectInput{Name: "sched"})
	if err != nil {
		t.Fatal(err)
	}
	f.ProjectID = project.ID
	// concurrency allow: the scheduler tests count one Run per occurrence
	// of many triggers of one task (sweep_test sets its own policies).
	cmd := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "echo tick"}, Concurrency: spec.ConcurrencyAllow,
		Retry: spec.RetryPolicy{MaxAttempts: 3, BackoffBaseMs: 1000, BackoffMaxMs: 8000, RetryOnLost: true}}.WithDefaults()
	task, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "tick", Spec: cmd})
	if err != nil {
		t.Fatal(err)
	}
	f.TaskID = task.ID
	return f
}

func (f Sched) Trigger(t *testing.T, expr string, misfire coresched.MisfirePolicy) SchedTrigger {
	t.Helper()
	tr, err := f.Pub.PublishTrigger(context.Background(), controlplane.TriggerInput{TaskID: f.TaskID, Expression: expr,
		TimeZone: "UTC", Misfire: misfire})
	if err != nil {
		t.Fatal(err)
	}
	return SchedTrigger{ID: tr.ID, Revision: tr.Revision}
}

func (f Sched) Claim(t *testing.T, owner string, budget int) []controlplane.ClaimedSchedule {
	t.Helper()
	cs, err := schedule.ClaimSchedules(context.Background(), f.Runtime, controlplane.ClaimRequest{Owner: owner, Budget: budget, Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (f Sched) Exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := f.SU.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (f Sched) Count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := f.SU.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// makeDue moves a schedule's cursor to a past occurrence of an every-second
// trigger (test setup standing in for time passing).
func (f Sched) MakeDue(t *testing.T, triggerID string, agoMs int64) int64 {
	t.Helper()
	var at int64
	if err := f.SU.QueryRow(context.Background(), `UPDATE ql3.trigger_schedules
		SET next_fire_at_ms = ((extract(epoch FROM clock_timestamp()) * 1000)::bigint - $2) / 1000 * 1000
		WHERE trigger_id = $1 RETURNING next_fire_at_ms`, triggerID, agoMs).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// dueTriggers publishes n every-second triggers, initialises them all in one
// batch (claimed by owner) and moves their cursors one second into the past.
func (f Sched) DueTriggers(t *testing.T, n int, owner string) []SchedTrigger {
	t.Helper()
	var trs []SchedTrigger
	for range n {
		trs = append(trs, f.Trigger(t, "* * * * * *", coresched.MisfireSkip))
	}
	var inits []controlplane.Admission
	for _, c := range f.Claim(t, owner, 16) {
		inits = append(inits, DecideFor(t, c))
	}
	if got := Admit(t, f, inits...); len(got) != n || slices.ContainsFunc(got, func(o controlplane.Outcome) bool { return o != controlplane.OutcomeInitialized }) {
		t.Fatalf("init batch %v", got)
	}
	for _, tr := range trs {
		f.MakeDue(t, tr.ID, 1000)
	}
	return trs
}

// dueAdmission publishes an every-second trigger, initialises it, moves its
// cursor one second into the past and returns the trigger with the
// admission decided for owner "a"'s claim of that occurrence.
func (f Sched) DueAdmission(t *testing.T) (SchedTrigger, controlplane.Admission) {
	t.Helper()
	tr := f.Trigger(t, "* * * * * *", coresched.MisfireSkip)
	Admit(t, f, DecideFor(t, f.Claim(t, "a", 1)[0]))
	f.MakeDue(t, tr.ID, 1000)
	return tr, DecideFor(t, f.Claim(t, "a", 1)[0])
}

// explain returns the plan of sql in a transaction (rolled back) that first
// runs setup, as the superuser. Prepared statements do not roll back, so
// they are deallocated afterwards.
func (f Sched) Explain(t *testing.T, setup []string, sql string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := f.SU.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = tx.Rollback(ctx)
		for _, stmt := range setup {
			if name, ok := strings.CutPrefix(stmt, "PREPARE "); ok {
				name, _, _ = strings.Cut(strings.SplitN(name, " ", 2)[0], "(")
				_, _ = f.SU.Exec(ctx, "DEALLOCATE "+name)
			}
		}
	}()
	for _, stmt := range setup {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

func DecideFor(t *testing.T, c controlplane.ClaimedSchedule) controlplane.Admission {
	t.Helper()
	loc, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cron.Parse(c.Expression, loc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := coresched.Decide(coresched.Trigger{ID: c.TriggerID.String(), Revision: c.TriggerRevision, Cron: s,
		Misfire: c.Misfire, GraceMs: c.GraceMs, ActivatedAtMs: c.ActivatedAtMs}, c.State(), c.AcquiredAtMs)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := controlplane.AdmissionFor(c, d)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func Admit(t *testing.T, f Sched, batch ...controlplane.Admission) []controlplane.Outcome {
	t.Helper()
	res, err := schedule.Admit(context.Background(), f.Runtime, batch, controlplane.AdmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcomes
}

// Life extends Sched with a worker and a live session, and
// writes Runs, Attempts and RunLeases in any state the way admission and
// dispatch would have left them (until dispatch's own transactions exist,
// the fixture stands in for them). Setup goes through the superuser
// connection; the code under test uses the runtime pool.
type Life struct {
	Sched
	WorkerID, SessionID uuid.UUID
}

func NewLife(t *testing.T) Life {
	t.Helper()
	f := Life{Sched: NewSched(t), WorkerID: uuid.New(), SessionID: uuid.New()}
	f.Exec(t, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms)
		VALUES ($1::uuid, 'w-' || $1::uuid::text, 'active', 1, 1)`, f.WorkerID)
	f.Session(t, f.SessionID, f.WorkerID, 1, "online", 60_000)
	return f
}

// session inserts a session whose heartbeat lease ends leaseMs from now.
func (f Life) Session(t *testing.T, id, worker uuid.UUID, generation int64, status string, leaseMs int64) {
	t.Helper()
	f.Exec(t, `INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms, closed_at_ms)
		SELECT $1::uuid, $2::uuid, $3::bigint, $4::text, 8, '{}', sha256('{}'), n.ms - 100000,
			greatest(n.ms + $5::bigint, n.ms - 100000), n.ms - 100000, n.ms, CASE WHEN $4::text = 'offline' THEN n.ms END
		FROM (SELECT `+NowSQL+` AS ms) n`, id, worker, generation, status, leaseMs)
}

const NowSQL = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// LifeRun describes a Run to write.
type LifeRun struct {
	Status       string // run status
	Attempt      string // status of the current attempt
	AttemptCount int    // default 1
	MaxAttempts  int    // default 3
	RetryOnLost  bool
	BackoffMs    int64 // base; max is 8× base
	Intent       string
	// lease: "" none, "live", "expired" (by 1 s), "stale" (expired by an hour),
	// "released", "completed"
	Lease   string
	Session uuid.UUID // default the fixture's session
	TaskID  string    // default the fixture's task
	AgeMs   int64     // created this long ago (default 1000)
}

// run writes r and returns the Run id and its current Attempt id.
func (f Life) Run(t *testing.T, r LifeRun) (runID, attemptID uuid.UUID) {
	t.Helper()
	runID, attemptID = uuid.New(), uuid.New()
	if r.AttemptCount == 0 {
		r.AttemptCount = 1
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = 3
	}
	if r.Session == uuid.Nil {
		r.Session = f.SessionID
	}
	if r.TaskID == "" {
		r.TaskID = f.TaskID
	}
	if r.AgeMs == 0 {
		r.AgeMs = 1000
	}
	terminal := map[string]bool{"succeeded": true, "failed": true, "cancelled": true, "timed_out": true}
	var intent any
	if r.Intent != "" {
		intent = r.Intent
	}
	f.Exec(t, `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, idempotency_key, scheduled_for_ms, status, attempt_count, retry_max_attempts, retry_backoff_base_ms,
		retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms,
		finished_at_ms, cancel_requested_at_ms, cancel_reason)
		SELECT $1::uuid, k.project_id, k.task_id, k.head_revision, e.execution_revision_id, e.digest, 'manual', $1::uuid::text,
			n.ms - $9::bigint, $3::text, $4::int, $5::int, $6::bigint, 8 * $6::bigint, $7::boolean, 60000, n.ms,
			n.ms - $9::bigint, n.ms - $9::bigint, n.ms - $9::bigint,
			CASE WHEN $8::boolean THEN n.ms END, CASE WHEN $10::text IS NOT NULL THEN n.ms - $9::bigint END, $10::text
		FROM ql3.tasks k JOIN ql3.execution_revisions e ON e.task_id = k.task_id AND e.task_revision = k.head_revision
		CROSS JOIN (SELECT `+NowSQL+` AS ms) n WHERE k.task_id = $2::uuid`,
		runID, r.TaskID, r.Status, r.AttemptCount, r.MaxAttempts, r.BackoffMs, r.RetryOnLost, terminal[r.Status],
		r.AgeMs, intent)
	for n := 1; n <= r.AttemptCount; n++ {
		id, status := uuid.New(), "failed"
		if n == r.AttemptCount {
			id, status = attemptID, r.Attempt
		}
		final := status != "claimed" && status != "starting" && status != "running"
		offered := status != "claimed" || r.Lease != ""
		f.Exec(t, `INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, worker_id,
			session_id, session_generation, offer_id, started_at_ms, finished_at_ms, created_at_ms, updated_at_ms)
			SELECT $1::uuid, $2::uuid, $3::int, r.project_id, $4::text, 'remote_worker',
				CASE WHEN $6::boolean THEN s.worker_id END, CASE WHEN $6::boolean THEN s.session_id END,
				CASE WHEN $6::boolean THEN s.generation END, CASE WHEN $6::boolean THEN 'offer-' || $1::uuid::text END,
				CASE WHEN $4::text <> 'claimed' THEN n.ms - 500 END, CASE WHEN $5::boolean THEN n.ms - 400 END, n.ms - 900, n.ms - 400
			FROM ql3.runs r, ql3.worker_sessions s, (SELECT `+NowSQL+` AS ms) n
			WHERE r.run_id = $2::uuid AND s.session_id = $7::uuid`, id, runID, n, status, final, offered, r.Session)
	}
	if r.Lease == "" {
		return runID, attemptID
	}
	f.Exec(t, `INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id,
		session_generation, offer_id, token_digest, lease_generation, status, release_reason, leased_at_ms,
		expires_at_ms, updated_at_ms, ended_at_ms)
		SELECT gen_random_uuid(), $1::uuid, $2::uuid, $3::int, r.project_id, s.worker_id, s.session_id, s.generation,
			'offer-' || $2::uuid::text, sha256($2::uuid::text::bytea), 1,
			CASE WHEN $4::text IN ('released', 'completed') THEN $4::text ELSE 'leased' END,
			CASE WHEN $4::text = 'released' THEN 'test' END, n.ms - 7200000,
			CASE $4::text WHEN 'live' THEN n.ms + 30000 WHEN 'expired' THEN n.ms - 1000 ELSE n.ms - 3600000 END,
			n.ms - 3600000, CASE WHEN $4::text IN ('released', 'completed') THEN n.ms - 3600000 END
		FROM ql3.runs r, ql3.worker_sessions s, (SELECT `+NowSQL+` AS ms) n
		WHERE r.run_id = $1::uuid AND s.session_id = $5::uuid`, runID, attemptID, r.AttemptCount, r.Lease, r.Session)
	return runID, attemptID
}

// RunState is what the tests compare before and after a sweep.
type RunState struct {
	Status, Attempt, Lease, Reason string
	Version, AttemptCount, Events  int64
}

func (f Life) State(t *testing.T, runID uuid.UUID) RunState {
	t.Helper()
	var s RunState
	if err := f.SU.QueryRow(context.Background(), `SELECT r.Status, a.status,
		coalesce((SELECT l.status FROM ql3.run_leases l WHERE l.run_id = r.run_id ORDER BY l.leased_at_ms DESC, l.lease_generation DESC LIMIT 1), ''),
		coalesce((SELECT l.release_reason FROM ql3.run_leases l WHERE l.run_id = r.run_id ORDER BY l.leased_at_ms DESC, l.lease_generation DESC LIMIT 1), ''),
		r.version, r.attempt_count, (SELECT count(*) FROM ql3.run_events e WHERE e.run_id = r.run_id)
		FROM ql3.runs r JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
		WHERE r.run_id = $1`, runID).Scan(&s.Status, &s.Attempt, &s.Lease, &s.Reason, &s.Version, &s.AttemptCount, &s.Events); err != nil {
		t.Fatal(err)
	}
	return s
}

// events lists a Run's event types in order.
func (f Life) Events(t *testing.T, runID uuid.UUID) []string {
	t.Helper()
	rows, err := f.SU.Query(context.Background(), `SELECT type FROM ql3.run_events WHERE run_id = $1 ORDER BY sequence`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// sweep runs one pass on the runtime pool with a 10 s grace.
func (f Life) Sweep(t *testing.T) controlplane.SweepReport {
	t.Helper()
	return SweepOn(t, f.Runtime)
}

func SweepOn(t *testing.T, pool *pgxpool.Pool) controlplane.SweepReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := sweep.Sweep(ctx, pool, controlplane.SweepOptions{})
	if err != nil {
		t.Fatalf("sweep: %v (report %+v)", err, rep)
	}
	return rep
}

// CheckIndexFits fails t unless the plan of query, with sequential scans
// disabled for the session, reads index without a sort.
func CheckIndexFits(t *testing.T, conn *pgx.Conn, query, index string) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "EXPLAIN "+query)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), index) || strings.Contains(plan.String(), "Sort") {
		t.Errorf("%s\nplan does not read %s in order:\n%s", query, index, plan.String())
	}
}

// WithPolicy publishes a task with the concurrency policy and makes it the
// fixture's task.
func (f Life) WithPolicy(t *testing.T, p spec.ConcurrencyPolicy) Life {
	t.Helper()
	task, err := f.Pub.PublishTask(context.Background(), controlplane.TaskInput{ProjectID: f.ProjectID, Name: "c-" + string(p),
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "sleep 3600"}, Concurrency: p}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	f.TaskID = task.ID
	return f
}

// BulkSchedules adds n triggers copied from triggerID's revision, their
// cursors spread at random over 1970–2100, and analyses the schedules (the
// plan tests read thousands of schedules).
func (f Sched) BulkSchedules(t *testing.T, triggerID string, n int) {
	t.Helper()
	f.Exec(t, `WITH src AS (SELECT * FROM ql3.trigger_revisions WHERE trigger_id = $1),
		ids AS (SELECT gen_random_uuid() AS id, g FROM generate_series(1, $2::int) g),
		trg AS (INSERT INTO ql3.triggers (trigger_id, project_id, task_id, name, head_revision, created_at_ms, updated_at_ms)
			SELECT ids.id, src.project_id, src.task_id, 'bulk-' || g, 1, 0, 0 FROM ids, src RETURNING trigger_id),
		rev AS (INSERT INTO ql3.trigger_revisions (trigger_id, revision, project_id, task_id, task_revision, execution_revision_id,
			execution_digest, expression, time_zone, misfire_policy, misfire_grace_ms, enabled, activated_at_ms, created_at_ms)
			SELECT trg.trigger_id, 1, src.project_id, src.task_id, src.task_revision, src.execution_revision_id, src.execution_digest,
			src.expression, src.time_zone, src.misfire_policy, src.misfire_grace_ms, true, 0, 0 FROM trg, src RETURNING trigger_id, project_id)
		INSERT INTO ql3.trigger_schedules (trigger_id, project_id, trigger_revision, next_fire_at_ms, updated_at_ms)
		SELECT trigger_id, project_id, 1, 1000 * (random() * 4102444800)::bigint, 0 FROM rev`, triggerID, n)
	f.Exec(t, `ANALYZE ql3.trigger_schedules`)
}

// CheckQueue fails t unless ql3.run_queue (migration 0022) holds exactly
// one row per queued Run, with the Run's key, revision and not_before_ms.
func (f Sched) CheckQueue(t *testing.T) {
	t.Helper()
	if n := f.Count(t, `SELECT count(*) FROM ql3.run_queue q
		FULL JOIN (SELECT run_id, priority, created_at_ms, execution_revision_id, execution_digest, not_before_ms
			FROM ql3.runs WHERE status = 'queued') r
			ON r.run_id = q.run_id AND r.priority = q.priority AND r.created_at_ms = q.created_at_ms
			AND r.execution_revision_id = q.execution_revision_id AND r.execution_digest = q.execution_digest
			AND r.not_before_ms = q.not_before_ms
		WHERE q.run_id IS NULL OR r.run_id IS NULL`); n != 0 {
		t.Fatalf("run_queue differs from the queued Runs in %d rows", n)
	}
}
