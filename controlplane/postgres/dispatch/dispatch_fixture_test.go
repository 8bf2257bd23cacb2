package dispatch_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

// dispatchEnv is one test database with a project and task to hang
// revisions and Runs on, a runtime-role pool and a Dispatcher on it. Rows
// the ingress or admission would write (sessions, queued Runs) are seeded
// as the superuser; everything under test runs on the runtime role.
type dispatchEnv struct {
	t        testing.TB
	ctx      context.Context
	db       *pgtest.DB
	su       *pgx.Conn
	runtime  *pgxpool.Pool
	d        *dispatch.Dispatcher
	project  uuid.UUID
	task     uuid.UUID
	revNo    int
	created  atomic.Int64 // FIFO order of seeded Runs
	workerNo int
}

const dbNow = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

func newDispatchEnv(t testing.TB, opts dispatch.DispatchOptions) *dispatchEnv {
	t.Helper()
	e := &dispatchEnv{t: t, ctx: context.Background(), db: pgtest.NewDB(t)}
	e.su = e.db.Conn(t)
	e.runtime = e.db.Pool(t, postgres.RoleRuntime)
	d, err := dispatch.NewDispatcher(e.runtime, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
	e.project, e.task = uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	e.exec(`INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ($1, 'p', 'active', 1, 1)`, e.project)
	return e
}

func (e *dispatchEnv) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.su.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", strings.Fields(sql)[0:3], err)
	}
}

func (e *dispatchEnv) scalar(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.su.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func testSpec() spec.Command {
	return spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/true"}, TimeoutMs: 60_000,
		Retry: spec.RetryPolicy{MaxAttempts: 2, BackoffBaseMs: 1000, BackoffMaxMs: 5000}, Concurrency: spec.ConcurrencyAllow}
}

// revision publishes one more task revision with cmd and its execution
// revision; it returns the execution revision id.
func (e *dispatchEnv) revision(cmd spec.Command) uuid.UUID {
	e.t.Helper()
	canonical, err := cmd.Canonical()
	if err != nil {
		e.t.Fatal(err)
	}
	digest := canonjson.Sum(spec.DigestDomain, canonical)
	e.revNo++
	tx, err := e.su.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	if e.revNo == 1 {
		if _, err := tx.Exec(e.ctx, `INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms)
			VALUES ($1, $2, 't', 1, 1, 1)`, e.task, e.project); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, err := tx.Exec(e.ctx, `INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
		VALUES ($1, $2, $3, $4::jsonb, $5, 1)`, e.task, e.revNo, e.project, string(canonical), digest[:]); err != nil {
		e.t.Fatal(err)
	}
	id := uuid.Must(uuid.NewV7())
	if _, err := tx.Exec(e.ctx, `INSERT INTO ql3.execution_revisions (execution_revision_id, project_id, task_id, task_revision,
		executor, spec_kind, canonical_spec, digest, created_at_ms) VALUES ($1, $2, $3, $4, 'remote_worker', $5, $6, $7, 1)`,
		id, e.project, e.task, e.revNo, spec.KindCommandV1, string(canonical), digest[:]); err != nil {
		e.t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return id
}

type seededRun struct{ run, attempt uuid.UUID }

// queue seeds a queued Run of rev exactly as admission leaves it: status
// queued, one claimed remote_worker Attempt, run.created + run.queued.
func (e *dispatchEnv) queue(rev uuid.UUID, priority int) seededRun {
	e.t.Helper()
	r := seededRun{uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())}
	created := e.created.Add(1)
	e.exec(`WITH x AS (SELECT task_revision, digest, canonical_spec::jsonb AS s FROM ql3.execution_revisions WHERE execution_revision_id = $3::uuid),
		r AS (INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin,
			idempotency_key, scheduled_for_ms, priority, status, attempt_count, retry_max_attempts, retry_backoff_base_ms,
			retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms)
		SELECT $1::uuid, $4::uuid, $5::uuid, x.task_revision, $3::uuid, x.digest, 'manual', $1::uuid::text, 1, $6::int, 'queued', 1,
			(x.s #>> '{retry,maxAttempts}')::int, (x.s #>> '{retry,backoffBaseMs}')::bigint, (x.s #>> '{retry,backoffMaxMs}')::bigint,
			coalesce((x.s #>> '{retry,retryOnLost}')::boolean, false), (x.s ->> 'timeoutMs')::bigint, 0, $7::bigint, $7::bigint, $7::bigint FROM x RETURNING run_id),
		a AS (INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
			SELECT $2::uuid, run_id, 1, $4::uuid, 'claimed', 'remote_worker', $7::bigint, $7::bigint FROM r RETURNING 1)
		INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
		SELECT run_id, v.seq, $4::uuid, v.att, v.type, '{}', $7::bigint FROM r, a,
			(VALUES (1, NULL::int, 'run.created'), (2, 1, 'run.queued')) AS v(seq, att, type)`,
		r.run, r.attempt, rev, e.project, e.task, priority, created)
	return r
}

// dispatchWorker is a registered worker with a live session.
type dispatchWorker struct {
	id, session, credential uuid.UUID
	generation              int64
	p                       controlplane.Principal
}

func linuxCaps() placement.Capabilities {
	return placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"argv", "shell"}}
}

// worker registers a worker with a credential and opens a session of
// generation 1 with caps and capacity, live for 45 s of database time.
func (e *dispatchEnv) worker(caps placement.Capabilities, capacity int) *dispatchWorker {
	e.t.Helper()
	e.workerNo++
	w := &dispatchWorker{id: uuid.Must(uuid.NewV7()), session: uuid.Must(uuid.NewV7()), credential: uuid.Must(uuid.NewV7()), generation: 1}
	canonical, err := caps.Canonical()
	if err != nil {
		e.t.Fatal(err)
	}
	digest, err := caps.Digest()
	if err != nil {
		e.t.Fatal(err)
	}
	e.exec(`INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms) VALUES ($1, $2, 'active', 1, 1)`,
		w.id, "w"+w.id.String())
	e.exec(`INSERT INTO ql3.worker_credentials (credential_id, worker_id, secret_digest, status, created_at_ms)
		VALUES ($1, $2, $3, 'active', 1)`, w.credential, w.id, make([]byte, 32))
	e.exec(`INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, credential_id, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT $1, $2, 1, 'online', $3, $4, $5::jsonb, $6, n, n + 45000, n, n FROM (SELECT `+dbNow+` AS n) x`,
		w.session, w.id, w.credential, capacity, string(canonical), digest[:])
	w.p = controlplane.Principal{WorkerID: w.id.String(), CredentialID: w.credential.String(), TLSIdentity: "w", RemoteAddr: "127.0.0.1"}
	return w
}

// replace opens generation+1 for w, closing the old session, as the
// ingress's replacement does.
func (e *dispatchEnv) replace(w *dispatchWorker) {
	e.t.Helper()
	old := w.session
	w.session, w.generation = uuid.Must(uuid.NewV7()), w.generation+1
	e.exec(`UPDATE ql3.worker_sessions SET status = 'offline', closed_at_ms = `+dbNow+`, updated_at_ms = `+dbNow+` WHERE session_id = $1`, old)
	e.exec(`INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, credential_id, capacity, capabilities,
		capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT $1, worker_id, $3, 'online', credential_id, capacity, capabilities, capabilities_digest, n, n + 45000, n, n
		FROM ql3.worker_sessions, (SELECT `+dbNow+` AS n) x WHERE session_id = $2`, w.session, old, w.generation)
}

func newToken(t testing.TB) fence.LeaseToken {
	t.Helper()
	tok, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// pullReq is a fresh pull of w (new offer id, new token).
func (w *dispatchWorker) pullReq(t testing.TB) protocol.OfferPullRequest {
	return protocol.OfferPullRequest{V: protocol.Version, SessionID: w.session.String(), Generation: w.generation,
		OfferID: uuid.Must(uuid.NewV7()).String(), LeaseToken: newToken(t)}
}

// pull asks for one offer and fails the test on an error.
func (e *dispatchEnv) pull(w *dispatchWorker) (*protocol.Offer, protocol.OfferPullRequest) {
	e.t.Helper()
	req := w.pullReq(e.t)
	o, _, err := e.d.Pull(e.ctx, w.p, req)
	if err != nil {
		e.t.Fatalf("pull: %v", err)
	}
	return o, req
}

func (e *dispatchEnv) events(run uuid.UUID) []string {
	e.t.Helper()
	rows, err := e.su.Query(e.ctx, `SELECT type FROM ql3.run_events WHERE run_id = $1 ORDER BY sequence`, run)
	if err != nil {
		e.t.Fatal(err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return types
}

func (e *dispatchEnv) status(run uuid.UUID) (runStatus, attemptStatus string) {
	e.t.Helper()
	if err := e.su.QueryRow(e.ctx, `SELECT r.status, a.status FROM ql3.runs r JOIN ql3.attempts a
		ON a.run_id = r.run_id AND a.attempt = r.attempt_count WHERE r.run_id = $1`, run).Scan(&runStatus, &attemptStatus); err != nil {
		e.t.Fatal(err)
	}
	return runStatus, attemptStatus
}
