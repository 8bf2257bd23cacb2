// Command dispatchbench measures worker dispatch through the real worker
// ingress (TLS 1.3 + client certificates + ql3w credentials) and the real
// dispatcher against one PostgreSQL database. scripts/bench/dispatch.sh
// runs it next to a pgbench -N baseline; it is a benchmark, not a test.
//
// Phase "claims": S sessions (one TLS client and certificate each, capacity
// 1) loop pull → starting ACK → running ACK → completion (a no-op run)
// over a window; reported: runs/s, pull latency p50/p99, and per completed
// run the database's committed transactions, WAL records and tuples
// written (pg_stat_database / pg_stat_wal deltas, read after the pools
// closed so every backend flushed its counters).
//
// Phase "idle": I sessions with nothing queued pull every cadence (2 s,
// the router profile, random phase); reported: pull latency p50/p99/max
// and WAL records and tuples written per idle pull (goal 0).
//
//	dispatchbench -dsn 'host=/tmp/sock dbname=ql3bench user=postgres' -sessions 32 -idle-sessions 1000
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/ingress"
	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/controlplane/postgres/session"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

type options struct {
	dsn                    string
	sessions, idleSessions int
	runs                   int
	window, idleWindow     time.Duration
	idleCadence            time.Duration
	baseline               float64
	ingressConns           int32
	dispatchConns          int32
	authCache              time.Duration
	cpuProfile             string
	baselineCPU            time.Duration
	batch                  int
}

func main() {
	var o options
	flag.StringVar(&o.dsn, "dsn", "", "superuser DSN of the benchmark database (roles log in on the same host/dbname)")
	flag.IntVar(&o.sessions, "sessions", 32, "concurrent worker sessions in the claims phase")
	flag.IntVar(&o.idleSessions, "idle-sessions", 1000, "worker sessions in the idle phase")
	flag.IntVar(&o.runs, "runs", 30000, "queued Runs seeded for the claims phase (must outlast the window)")
	flag.DurationVar(&o.window, "window", 20*time.Second, "claims phase length")
	flag.DurationVar(&o.idleWindow, "idle-window", 20*time.Second, "idle phase length")
	flag.DurationVar(&o.idleCadence, "idle-cadence", 2*time.Second, "pull cadence of an idle session")
	flag.Float64Var(&o.baseline, "baseline-tps", 0, "pgbench -N TPS measured in the same run")
	ingressConns := flag.Int("ingress-conns", 4, "ingress-role pool size (DESIGN §8 default 4)")
	dispatchConns := flag.Int("dispatch-conns", 8, "runtime-role pool size of the dispatcher")
	flag.DurationVar(&o.authCache, "auth-cache", ingress.DefaultPrincipalCacheTTL, "principal cache TTL of the ingress (0 = every request authenticates in PostgreSQL)")
	flag.DurationVar(&o.baselineCPU, "baseline-server-cpu", 0, "PostgreSQL CPU time per pgbench -N transaction, measured in the same run")
	flag.IntVar(&o.batch, "batch", 1, "claims phase: session capacity and batch size (1 = the single routes; 2–16 = the batch envelopes of ADR 0058)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the claims phase to this file")
	flag.Parse()
	o.ingressConns, o.dispatchConns = int32(*ingressConns), int32(*dispatchConns)
	if err := runBench(o); err != nil {
		fmt.Fprintln(os.Stderr, "dispatchbench:", err)
		os.Exit(1)
	}
}

// stack is one ingress (listener, pools, dispatcher) for one phase.
type stack struct {
	srv                 *ingress.Server
	ingPool, dispatchDB *pgxpool.Pool
	serverCA            *x509.CertPool
	dispatcher          *dispatch.Dispatcher
	stopPacer           context.CancelFunc
	pacerDone           chan struct{}
}

type bench struct {
	o      options
	ctx    context.Context
	su     *pgx.Conn
	ca     *devpki.CA
	tlsDir string
	files  ingress.TLSFiles
	roots  *x509.CertPool
}

type worker struct {
	id, cred, credID string
	client           *http.Client
	session          protocol.SessionState
}

func runBench(o options) error {
	if o.dsn == "" {
		return errors.New("-dsn is required")
	}
	ctx := context.Background()
	su, err := pgx.Connect(ctx, o.dsn)
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
	b := &bench{o: o, ctx: ctx, su: su}
	if err := b.pki(); err != nil {
		return err
	}
	defer os.RemoveAll(b.tlsDir)

	fmt.Printf("| phase | figure | value |\n|---|---|---|\n")
	if b.o.cpuProfile != "" {
		// The claims phase's CPU (client and server share this process).
		f, err := os.Create(b.o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	err = b.claims()
	pprof.StopCPUProfile()
	if err != nil {
		return fmt.Errorf("claims phase: %w", err)
	}
	if err := b.idle(); err != nil {
		return fmt.Errorf("idle phase: %w", err)
	}
	return nil
}

func (b *bench) pool(role string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgx.ParseConfig(b.o.dsn)
	if err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("host=%s port=%d dbname=%s user=%s sslmode=disable", cfg.Host, cfg.Port, cfg.Database, role)
	p, err := postgres.NewPool(b.ctx, postgres.PoolConfig{DSN: dsn, ExpectRole: role, MaxConns: conns, ApplicationName: "dispatchbench"})
	if err != nil {
		return nil, err
	}
	return p, p.Ping(b.ctx)
}

func (b *bench) pki() error {
	now := time.Now()
	var err error
	if b.ca, err = devpki.NewCA("ql3 bench workers", devpki.For(now, 24*time.Hour)); err != nil {
		return err
	}
	serverCA, err := devpki.NewCA("ql3 bench server", devpki.For(now, 24*time.Hour))
	if err != nil {
		return err
	}
	server, err := serverCA.IssueServer(devpki.Leaf{CommonName: "ingress", Hosts: []string{"127.0.0.1", "localhost"}, Validity: devpki.For(now, 24*time.Hour)})
	if err != nil {
		return err
	}
	if b.tlsDir, err = os.MkdirTemp("", "dispatchbench-"); err != nil {
		return err
	}
	cert, key, err := server.WriteFiles(b.tlsDir, "server")
	if err != nil {
		return err
	}
	caPath := filepath.Join(b.tlsDir, "clients.pem")
	if err := devpki.WriteFileAtomic(caPath, b.ca.CertPEM(), 0o644); err != nil {
		return err
	}
	b.files = ingress.TLSFiles{CertFile: cert, KeyFile: key, ClientCAFile: caPath}
	b.roots = x509.NewCertPool()
	b.roots.AppendCertsFromPEM(serverCA.CertPEM())
	return nil
}

// start brings up an ingress with its own pools (closed by stop, so every
// backend flushes its statistics before they are read).
func (b *bench) start() (*stack, error) {
	ing, err := b.pool(postgres.RoleWorkerIngress, b.o.ingressConns)
	if err != nil {
		return nil, err
	}
	rt, err := b.pool(postgres.RoleRuntime, b.o.dispatchConns)
	if err != nil {
		return nil, err
	}
	sessions, err := session.NewSessions(ing, session.SessionOptions{})
	if err != nil {
		return nil, err
	}
	d, err := dispatch.NewDispatcher(rt, dispatch.DispatchOptions{})
	if err != nil {
		return nil, err
	}
	// The pull pacer with its refresh loop, as ql3-control wires it (ADR
	// 0030): its reads are part of what an idle pull costs the server.
	pacer, err := pullpace.NewPullPacer(rt, pullpace.PullPacerOptions{})
	if err != nil {
		return nil, err
	}
	pctx, stopPacer := context.WithCancel(context.Background())
	pacerDone := make(chan struct{})
	go func() { defer close(pacerDone); pacer.Run(pctx) }()
	auth := session.NewWorkerAuth(ing)
	srv, err := ingress.New(ingress.Config{TLS: b.files, Sessions: sessions, Leases: d, Pacer: pacer, Audit: auth,
		Auth: ingress.NewPrincipalCache(auth, b.o.authCache, time.Now),
		// Only the ingress's errors (an internal error names its cause
		// there, never in the answer) reach stderr, beside the table.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})), ReloadInterval: -1})
	if err != nil {
		stopPacer()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stopPacer()
		return nil, err
	}
	if err := srv.StartListener(ln); err != nil {
		stopPacer()
		return nil, err
	}
	return &stack{srv: srv, ingPool: ing, dispatchDB: rt, dispatcher: d, stopPacer: stopPacer, pacerDone: pacerDone}, nil
}

func (s *stack) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	s.stopPacer()
	<-s.pacerDone
	s.ingPool.Close()
	s.dispatchDB.Close()
}

// workers registers n workers with certificates and credentials and opens
// a session (capacity) for each through a listener of its own, 16 at a
// time; then that listener and its pools close, so the statistics of the
// setup are flushed before a phase's counters are read. The sessions'
// heartbeat leases are stretched (setup of 1,000 sessions outlasts 45 s on
// a busy box; a real worker would heartbeat, which is not what is
// measured here).
func (b *bench) workers(n, capacity int, prefix string) ([]*worker, error) {
	admin, err := b.pool(postgres.RoleAdmin, 4)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	s, err := b.start()
	if err != nil {
		return nil, err
	}
	defer s.stop()
	pub := publication.NewPublisher(admin, publication.PublisherOptions{})
	out := make([]*worker, n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// Setup, not measurement: a serialization failure of the
			// admin's registration (16 at a time) is retried as a
			// client would, with jittered backoff, a few times (every
			// try registers a fresh name).
			w, err := b.newWorker(s, pub, i, capacity, prefix)
			for try := 1; err != nil && errs.Code(err) == errs.Unavailable && try < 5; try++ {
				time.Sleep(time.Duration(try)*20*time.Millisecond + time.Duration(mrand.Int64N(int64(20*time.Millisecond))))
				w, err = b.newWorker(s, pub, i, capacity, prefix)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[i] = w
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if _, err := b.su.Exec(b.ctx, `UPDATE ql3.worker_sessions SET lease_expires_at_ms = lease_expires_at_ms + 3600000
		WHERE status = 'online'`); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *bench) newWorker(s *stack, pub *publication.Publisher, i, capacity int, prefix string) (*worker, error) {
	caps := placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"argv"}}.Normalize()
	{
		name := fmt.Sprintf("%s-%d-%s", prefix, i, uuid.NewString()[:8])
		identity := "spiffe://ql3/bench/" + name
		rec, err := pub.RegisterWorker(b.ctx, controlplane.WorkerInput{Name: name, TLSIdentity: identity})
		if err != nil {
			return nil, err
		}
		c, text, err := pub.IssueWorkerCredential(b.ctx, rec.ID)
		if err != nil {
			return nil, err
		}
		pair, err := b.ca.IssueClient(devpki.Leaf{CommonName: name, URIs: []string{identity}, Validity: devpki.For(time.Now(), 24*time.Hour)})
		if err != nil {
			return nil, err
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair.TLS()},
			RootCAs: b.roots, ServerName: "localhost"}, MaxIdleConnsPerHost: 1}
		w := &worker{id: rec.ID, cred: text, credID: c.ID, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
		open, err := protocol.SessionOpen{AgentVersion: "dispatchbench", CredentialID: c.ID, Capacity: capacity, Capabilities: caps}.Encode()
		if err != nil {
			return nil, err
		}
		body, status, err := w.post(s, protocol.PathSessionOpen, open)
		if err != nil || status != http.StatusOK {
			return nil, fmt.Errorf("open: %d %s %v", status, body, err)
		}
		if w.session, err = protocol.DecodeSessionState(body); err != nil {
			return nil, err
		}
		w.client.CloseIdleConnections()
		return w, nil
	}
}

func (w *worker) post(s *stack, path string, body []byte) ([]byte, int, error) {
	req, err := http.NewRequest(http.MethodPost, "https://"+s.srv.Addr()+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Worker "+w.cred)
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, protocol.MaxOfferBatchBytes+1))
	return data, resp.StatusCode, err
}

func (w *worker) pullBody() ([]byte, fence.LeaseToken, error) {
	tok, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		return nil, "", err
	}
	raw, err := protocol.OfferPullRequest{SessionID: w.session.SessionID, Generation: w.session.Generation,
		OfferID: uuid.NewString(), LeaseToken: tok}.Encode()
	return raw, tok, err
}

// dbCounters are the cumulative counters a phase is measured by.
type dbCounters struct {
	commits, walRecords, tuples, hotUpdates int64
	lsn                                     string        // pg_current_wal_lsn, for indexEntries
	serverCPU, benchCPU                     time.Duration // read once settled (they never stop moving)
}

func (b *bench) counters() (dbCounters, error) {
	var c dbCounters
	// Tuples: rows of ql3's tables only (autoanalyze writes pg_statistic
	// rows, which are not the dispatcher's). WAL is cluster-wide and
	// includes background work (autovacuum, checkpoints).
	err := b.su.QueryRow(b.ctx, `SELECT d.xact_commit, w.wal_records,
		(SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables WHERE schemaname = 'ql3'),
		(SELECT coalesce(sum(n_tup_hot_upd), 0)::bigint FROM pg_stat_user_tables WHERE schemaname = 'ql3'),
		pg_current_wal_lsn()::text
		FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`).Scan(&c.commits, &c.walRecords, &c.tuples,
		&c.hotUpdates, &c.lsn)
	return c, err
}

// indexEntries counts the B-tree entries written between two settled
// counters from the WAL (pg_walinspect: one INSERT_LEAF or INSERT_POST
// record per entry; cluster-wide, so background work is included). -1
// when the extension is not available.
func (b *bench) indexEntries(before, after dbCounters) int64 {
	if _, err := b.su.Exec(b.ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		return -1
	}
	var n int64
	if err := b.su.QueryRow(b.ctx, `SELECT coalesce(sum(count), 0)::bigint
		FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true)
		WHERE "resource_manager/record_type" IN ('Btree/INSERT_LEAF', 'Btree/INSERT_POST')`,
		before.lsn, after.lsn).Scan(&n); err != nil {
		return -1
	}
	return n
}

// settle waits until the statistics stop moving (backends that closed
// flush theirs on exit).
func (b *bench) settle() (dbCounters, error) {
	// This connection's own writes (seeding, session leases) are counted
	// when its statistics are flushed, which PostgreSQL otherwise delays
	// by up to 10 s: force it (PostgreSQL ≥ 15), or they land in the window.
	if _, err := b.su.Exec(b.ctx, "SELECT pg_catalog.pg_stat_force_next_flush()"); err != nil {
		return dbCounters{}, err
	}
	prev, err := b.counters()
	for range 50 {
		if err != nil {
			return prev, err
		}
		time.Sleep(200 * time.Millisecond)
		var cur dbCounters
		if cur, err = b.counters(); err == nil && cur == prev {
			if cur.serverCPU, err = b.serverCPU(); err != nil {
				return cur, err
			}
			cur.benchCPU, err = processCPU()
			return cur, err
		}
		prev = cur
	}
	return prev, err
}

// seed queues n no-op Runs exactly as admission leaves them.
func (b *bench) seed(n int) error {
	cmd := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/true"}, TimeoutMs: 60_000,
		Retry: spec.RetryPolicy{MaxAttempts: 1}, Concurrency: spec.ConcurrencyAllow}
	canonical, err := cmd.Canonical()
	if err != nil {
		return err
	}
	digest := canonjson.Sum(spec.DigestDomain, canonical)
	project, task, rev := uuid.New(), uuid.New(), uuid.New()
	tx, err := b.su.Begin(b.ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(b.ctx) }()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ($1::uuid, $1::uuid::text, 'active', 1, 1)`, []any{project}},
		{`INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ($1::uuid, $2::uuid, 't', 1, 1, 1)`, []any{task, project}},
		{`INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms) VALUES ($1::uuid, 1, $2::uuid, $3::jsonb, $4::bytea, 1)`,
			[]any{task, project, string(canonical), digest[:]}},
		{`INSERT INTO ql3.execution_revisions (execution_revision_id, project_id, task_id, task_revision, executor, spec_kind, canonical_spec, digest, created_at_ms)
			VALUES ($1::uuid, $2::uuid, $3::uuid, 1, 'remote_worker', $4::text, $5::text, $6::bytea, 1)`,
			[]any{rev, project, task, spec.KindCommandV1, string(canonical), digest[:]}},
		{`WITH r AS (INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin,
				idempotency_key, scheduled_for_ms, status, attempt_count, retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms,
				retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms)
			SELECT gen_random_uuid(), $1::uuid, $2::uuid, 1, $3::uuid, $4::bytea, 'manual', 'bench-' || g, 1, 'queued', 1, 1, 0, 0, false,
				60000, 0, g, g, g FROM generate_series(1, $5::int) g RETURNING run_id, created_at_ms),
			a AS (INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
				SELECT gen_random_uuid(), run_id, 1, $1::uuid, 'claimed', 'remote_worker', created_at_ms, created_at_ms FROM r RETURNING 1)
			INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
			SELECT r.run_id, v.seq, $1::uuid, v.att, v.type, '{}', r.created_at_ms FROM r,
				(VALUES (1, NULL::int, 'run.created'), (2, 1, 'run.queued')) AS v(seq, att, type)`,
			[]any{project, task, rev, digest[:], n}},
	} {
		if _, err := tx.Exec(b.ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	if err := tx.Commit(b.ctx); err != nil {
		return err
	}
	_, err = b.su.Exec(b.ctx, "VACUUM ANALYZE ql3.runs, ql3.attempts, ql3.run_events")
	return err
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[max(i, 0)]
}

func row(phase, figure string, format string, args ...any) {
	fmt.Printf("| %s | %s | %s |\n", phase, figure, fmt.Sprintf(format, args...))
}
