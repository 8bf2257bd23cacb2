package queuestat_test

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/queuestat"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

// fakeClock stands in for time in the seeded rows: every arrival is
// stamped with it, and the test moves it; nothing sleeps. It starts an
// hour before the database's clock, so every queued Run is already old by
// database time and the queue reads as overloaded.
type fakeClock struct{ ms int64 }

func (c *fakeClock) step(ms int64) int64 { c.ms += ms; return c.ms }

type queueEnv struct {
	t       *testing.T
	ctx     context.Context
	su      *pgx.Conn
	project uuid.UUID
	task    uuid.UUID
	rev     uuid.UUID
}

const dbNow = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

func (e *queueEnv) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.su.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", strings.Join(strings.Fields(sql)[0:3], " "), err)
	}
}

// newQueueEnv makes a project with one remote task revision (concurrency
// allow: every occurrence is its own Run).
func newQueueEnv(t *testing.T, db *pgtest.DB) *queueEnv {
	e := &queueEnv{t: t, ctx: context.Background(), su: db.Conn(t), project: uuid.Must(uuid.NewV7()),
		task: uuid.Must(uuid.NewV7()), rev: uuid.Must(uuid.NewV7())}
	cmd := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/true"}, TimeoutMs: 60_000,
		Retry: spec.RetryPolicy{MaxAttempts: 1, BackoffBaseMs: 1000, BackoffMaxMs: 1000}, Concurrency: spec.ConcurrencyAllow}
	canonical, err := cmd.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	digest := canonjson.Sum(spec.DigestDomain, canonical)
	e.exec(`INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ($1, 'p', 'active', 1, 1)`, e.project)
	e.exec(`BEGIN`) // the task and its head revision reference each other (deferred)
	e.exec(`INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ($1, $2, 't', 1, 1, 1)`,
		e.task, e.project)
	e.exec(`INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
		VALUES ($1, 1, $2, $3::jsonb, $4, 1)`, e.task, e.project, string(canonical), digest[:])
	e.exec(`INSERT INTO ql3.execution_revisions (execution_revision_id, project_id, task_id, task_revision,
		executor, spec_kind, canonical_spec, digest, created_at_ms) VALUES ($1, $2, $3, 1, 'remote_worker', $4, $5, $6, 1)`,
		e.rev, e.project, e.task, spec.KindCommandV1, string(canonical), digest[:])
	e.exec(`COMMIT`)
	return e
}

// arrive queues one Run at priority, created and queued at atMs, exactly
// as admission leaves it (one claimed Attempt, run.created + run.queued).
func (e *queueEnv) arrive(priority int, atMs int64) uuid.UUID {
	e.t.Helper()
	run, attempt := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	e.exec(`WITH x AS (SELECT task_revision, digest FROM ql3.execution_revisions WHERE execution_revision_id = $3::uuid),
		r AS (INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin,
			idempotency_key, scheduled_for_ms, priority, status, attempt_count, retry_max_attempts, retry_backoff_base_ms,
			retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms)
		SELECT $1::uuid, $4::uuid, $5::uuid, x.task_revision, $3::uuid, x.digest, 'manual', $1::uuid::text, $7::bigint, $6::int,
			'queued', 1, 1, 1000, 1000, false, 60000, 0, $7::bigint, $7::bigint, $7::bigint FROM x RETURNING run_id),
		a AS (INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
			SELECT $2::uuid, run_id, 1, $4::uuid, 'claimed', 'remote_worker', $7::bigint, $7::bigint FROM r RETURNING 1)
		INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
		SELECT run_id, v.seq, $4::uuid, v.att, v.type, '{}', $7::bigint FROM r, a,
			(VALUES (1, NULL::int, 'run.created'), (2, 1, 'run.queued')) AS v(seq, att, type)`,
		run, attempt, e.rev, e.project, e.task, priority, atMs)
	return run
}

// session registers a worker with one live session of capacity.
func (e *queueEnv) session(capacity int) (controlplane.Principal, uuid.UUID) {
	e.t.Helper()
	worker, session, cred := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	caps := placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"argv", "shell"}}
	canonical, err := caps.Canonical()
	if err != nil {
		e.t.Fatal(err)
	}
	digest, err := caps.Digest()
	if err != nil {
		e.t.Fatal(err)
	}
	e.exec(`INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms) VALUES ($1, $2, 'active', 1, 1)`,
		worker, "w"+worker.String())
	e.exec(`INSERT INTO ql3.worker_credentials (credential_id, worker_id, secret_digest, status, created_at_ms)
		VALUES ($1, $2, $3, 'active', 1)`, cred, worker, make([]byte, 32))
	e.exec(`INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, credential_id, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT $1, $2, 1, 'online', $3, $4, $5::jsonb, $6, n, n + 600000, n, n FROM (SELECT `+dbNow+` AS n) x`,
		session, worker, cred, capacity, string(canonical), digest[:])
	return controlplane.Principal{WorkerID: worker.String(), CredentialID: cred.String(), TLSIdentity: "w", RemoteAddr: "127.0.0.1"}, session
}

// queued is the test's model of one waiting Run.
type queued struct {
	run      uuid.UUID
	priority int
	at       int64
	seq      int // arrival order: the tie-break of equal stamps is the run id (a UUIDv7, increasing)
}

// TestFIFOWithinPriorityUnderOverload offers Runs faster than the workers
// take them (three arrive per step at mixed priorities, one is taken), so
// the queue grows without bound, and checks at every step that the Run
// taken is the highest-priority, oldest one waiting — FIFO within
// priority holds however long the queue gets — and that the queue report
// (/metrics, /readyz) says overloaded with the depth and oldest age of
// each project and priority the model expects.
func TestFIFOWithinPriorityUnderOverload(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	e := newQueueEnv(t, db)
	runtime := db.Pool(t, postgres.RoleRuntime)
	d, err := dispatch.NewDispatcher(runtime, dispatch.DispatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	principal, session := e.session(1000)
	reader := queuestat.New(db.Pool(t, postgres.RoleAdmin))

	var now int64
	if err := e.su.QueryRow(e.ctx, `SELECT `+dbNow).Scan(&now); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{ms: now - 3_600_000}
	priorities := []int{0, 5, 0, -3, 0, 5, 0, -3, 0} // cycled: three arrivals per step
	var waiting []queued
	seq := 0
	const steps = 24
	for step := range steps {
		for i := range 3 {
			p := priorities[(3*step+i)%len(priorities)]
			at := clock.step(250 * int64(1+i%2)) // uneven gaps; arrivals never share a stamp
			waiting = append(waiting, queued{run: e.arrive(p, at), priority: p, at: at, seq: seq})
			seq++
		}
		// The model: priority first, then FIFO.
		slices.SortStableFunc(waiting, func(a, b queued) int {
			if a.priority != b.priority {
				return b.priority - a.priority
			}
			return a.seq - b.seq
		})
		want := waiting[0]
		req := protocol.OfferPullRequest{V: protocol.Version, SessionID: session.String(), Generation: 1,
			OfferID: uuid.Must(uuid.NewV7()).String(), LeaseToken: newToken(t)}
		offer, _, err := d.Pull(e.ctx, principal, req)
		if err != nil {
			t.Fatalf("step %d: pull: %v", step, err)
		}
		if offer == nil {
			t.Fatalf("step %d: no offer with %d Runs queued", step, len(waiting))
		}
		if offer.RunID != want.run.String() {
			t.Fatalf("step %d: offered %s, want %s (priority %d, queued at %d): FIFO within priority broke under overload",
				step, offer.RunID, want.run, want.priority, want.at)
		}
		waiting = waiting[1:]

		rep, err := reader.ReadQueue(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, step, rep, waiting, e.project)
	}
	if len(waiting) != 2*steps {
		t.Fatalf("model holds %d Runs, want %d (the queue grew by two a step)", len(waiting), 2*steps)
	}
}

// checkReport compares the queue report with the model: the totals, one
// group per priority (oldest first) with its depth, ages consistent with
// the stamps (older stamp, larger age), and overloaded (an hour old).
func checkReport(t *testing.T, step int, rep controlplane.QueueReport, waiting []queued, project uuid.UUID) {
	t.Helper()
	depth := map[int]int64{}
	oldest := map[int]int64{}
	for _, q := range waiting {
		depth[q.priority]++
		if o, ok := oldest[q.priority]; !ok || q.at < o {
			oldest[q.priority] = q.at
		}
	}
	if rep.Depth != int64(len(waiting)) || len(rep.Groups) != len(depth) || rep.Truncated {
		t.Fatalf("step %d: report depth %d, %d groups (truncated %v), want %d in %d groups", step, rep.Depth, len(rep.Groups),
			rep.Truncated, len(waiting), len(depth))
	}
	for i, g := range rep.Groups {
		if g.ProjectID != project || g.Depth != depth[g.Priority] {
			t.Errorf("step %d: group %+v, want depth %d of project %s", step, g, depth[g.Priority], project)
		}
		if i > 0 {
			prev := rep.Groups[i-1]
			if oldest[prev.Priority] > oldest[g.Priority] || prev.OldestAgeMs < g.OldestAgeMs {
				t.Errorf("step %d: groups not oldest first: %+v before %+v", step, prev, g)
			}
			// Ages are read in one statement: their differences are the stamps'.
			if got, want := prev.OldestAgeMs-g.OldestAgeMs, oldest[g.Priority]-oldest[prev.Priority]; got != want {
				t.Errorf("step %d: age gap %d ms between priorities %d and %d, want %d", step, got, prev.Priority, g.Priority, want)
			}
		}
	}
	if rep.OldestAgeMs != rep.Groups[0].OldestAgeMs {
		t.Errorf("step %d: oldest age %d, first group's %d", step, rep.OldestAgeMs, rep.Groups[0].OldestAgeMs)
	}
	h := rep.Health(0)
	if !h.Overloaded || h.Depth != rep.Depth || h.ThresholdMs != controlplane.DefaultOverloadQueueAgeMs {
		t.Errorf("step %d: health %+v, want overloaded (oldest Run queued an hour ago)", step, h)
	}
}

func newToken(t testing.TB) fence.LeaseToken {
	t.Helper()
	tok, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
