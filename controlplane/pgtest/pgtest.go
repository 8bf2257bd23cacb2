// Package pgtest runs real PostgreSQL servers for tests: never a mock.
//
// A test package calls Main from TestMain. The first test that asks for a
// database starts one shared cluster for the whole package (process) from the
// local server binaries (FindBin), migrates a template database once, and
// every test then gets its own database cloned from that template
// (CREATE DATABASE … TEMPLATE), so tests are isolated and may run in
// parallel. Tests that need a cluster of their own (fault injection, a
// standby to promote) call NewCluster.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		db := pgtest.NewDB(t)
//		runtime := db.Pool(t, postgres.RoleRuntime) // LOGIN as ql3_runtime
//		...
//	}
//
// When the test process runs as root, the servers run as the "postgres" OS
// user. If PostgreSQL is not installed every test fails with a message that
// says how to install it: a missing server is never a skip.
//
// Environment: QL3_PG_BIN (server binary directory; default: highest
// /usr/lib/postgresql/*/bin), QL3_PG_USER (OS user for the servers when
// root; default postgres), QL3_PG_TMPDIR (where clusters live; default
// /dev/shm when it has room, else $TMPDIR), QL3_PGTEST_VERBOSE (log start
// and clone times to stderr).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/postgres"
)

// TemplateDB is the migrated database every NewDB clones.
const TemplateDB = "ql3_template"

// Superuser is the bootstrap superuser role of harness clusters.
const Superuser = superuser

var (
	mainUsed   atomic.Bool
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Main runs the package's tests and then stops every cluster they started.
// Call it from TestMain. A test that panics kills the process before Main can
// clean up: the servers die with it (Pdeathsig) and the next harness run
// removes their directories.
func Main(m *testing.M) {
	mainUsed.Store(true)
	code := m.Run()
	stopAll()
	os.Exit(code)
}

// Shared returns the package's shared cluster, starting it on first use.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	if !mainUsed.Load() {
		tb.Fatal("pgtest: the shared cluster needs pgtest.Main: add `func TestMain(m *testing.M) { pgtest.Main(m) }` to the package")
	}
	sharedOnce.Do(func() {
		shared, sharedErr = startPrimary()
		if sharedErr == nil {
			logf("pgtest: shared cluster started in %v (port %d)", LastStartDuration().Round(time.Millisecond), shared.port)
		}
	})
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return shared
}

// NewCluster starts a primary cluster owned by this test and stopped when it
// ends.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := startPrimary()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("pgtest: stop cluster: %v", err)
		}
	})
	return c
}

// NewDB returns a fresh migrated database on the shared cluster.
func NewDB(tb testing.TB) *DB {
	tb.Helper()
	return Shared(tb).NewDB(tb)
}

// DB is one test's database.
type DB struct {
	Cluster *Cluster
	Name    string
}

var dbSeq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

func dbName(tb testing.TB) string {
	n := dbSeq.Add(1)
	base := unsafeChars.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	name := fmt.Sprintf("t_%d_%s", n, base)
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// NewDB clones the migrated template into a new database for this test. The
// template is built on first use. Databases are not dropped after the test
// (DROP DATABASE forces a checkpoint); the whole cluster goes at the end.
// Database-level GRANTs are not inherited from a template, so the clone has
// PostgreSQL's default database ACL; schema and table privileges are exact.
func (c *Cluster) NewDB(tb testing.TB) *DB {
	tb.Helper()
	ctx := context.Background()
	if err := c.ensureTemplate(ctx); err != nil {
		tb.Fatal(err)
	}
	name := dbName(tb)
	t0 := time.Now()
	if err := c.adminExec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+TemplateDB); err != nil {
		tb.Fatalf("pgtest: clone template: %v", err)
	}
	logf("pgtest: cloned %s in %v", name, time.Since(t0).Round(time.Microsecond))
	return &DB{Cluster: c, Name: name}
}

// NewEmptyDB creates a database with no ql3 schema (from template0), for
// migration tests.
func (c *Cluster) NewEmptyDB(tb testing.TB) *DB {
	tb.Helper()
	name := dbName(tb)
	if err := c.adminExec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0"); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	return &DB{Cluster: c, Name: name}
}

// adminScan runs a one-row query on the admin connection and scans it.
func (c *Cluster) adminScan(ctx context.Context, sql string, args []any, dest ...any) error {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	conn, err := c.adminConn(ctx)
	if err != nil {
		return err
	}
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}

// adminExec runs one statement (outside a transaction, as CREATE DATABASE
// needs) on the admin connection.
func (c *Cluster) adminExec(ctx context.Context, sql string) error {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	conn, err := c.adminConn(ctx)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	return err
}

// adminConn returns the superuser connection to database postgres, opening
// it when needed. The caller holds adminMu.
func (c *Cluster) adminConn(ctx context.Context) (*pgx.Conn, error) {
	if c.admin == nil || c.admin.IsClosed() {
		conn, err := c.Connect(ctx, "postgres")
		if err != nil {
			return nil, err
		}
		c.admin = conn
	}
	return c.admin, nil
}

// ensureTemplate migrates TemplateDB once per cluster and lets the four ql3
// roles log in (trusted over the socket, c.Password over TCP). A standby
// inherits both from its primary.
func (c *Cluster) ensureTemplate(ctx context.Context) error {
	c.tmplMu.Lock()
	defer c.tmplMu.Unlock()
	if c.tmplReady || c.tmplErr != nil {
		return c.tmplErr
	}
	c.tmplErr = c.buildTemplate(ctx)
	return c.tmplErr
}

func (c *Cluster) buildTemplate(ctx context.Context) error {
	// A standby (or a promoted one) inherits the template from its primary;
	// ALLOW_CONNECTIONS false is set last, so it marks a finished template.
	var allowConn bool
	err := c.adminScan(ctx, "SELECT datallowconn FROM pg_catalog.pg_database WHERE datname = $1", []any{TemplateDB}, &allowConn)
	switch {
	case err == nil && !allowConn:
		c.tmplReady = true
		return nil
	case err == nil:
		return fmt.Errorf("pgtest: %s exists but was never finished (a crash while migrating it?)", TemplateDB)
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if err := c.adminExec(ctx, "CREATE DATABASE "+TemplateDB); err != nil {
		return fmt.Errorf("pgtest: create template: %w", err)
	}
	conn, err := c.Connect(ctx, TemplateDB)
	if err != nil {
		return err
	}
	if _, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{}); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("pgtest: migrate template: %w", err)
	}
	if err := postgres.EnableLogins(ctx, conn, c.password); err != nil {
		_ = conn.Close(ctx)
		return err
	}
	if err := conn.Close(ctx); err != nil {
		return err
	}
	// Nobody may connect to the template any more: a connection would make
	// concurrent clones fail ("source database is being accessed").
	if err := c.adminExec(ctx, "ALTER DATABASE "+TemplateDB+" ALLOW_CONNECTIONS false"); err != nil {
		return err
	}
	c.tmplReady = true
	return nil
}

// DSN connects to the test database as role over the socket; "" means the
// superuser.
func (d *DB) DSN(role string) string {
	if role == "" {
		role = superuser
	}
	return d.Cluster.DSN(d.Name, role)
}

// Pool opens a pool (postgres.NewPool: empty search_path, role checked) to
// the test database as role ("" = superuser), closed when the test ends.
func (d *DB) Pool(tb testing.TB, role string) *pgxpool.Pool {
	tb.Helper()
	expect := role
	if expect == "" {
		expect = superuser
	}
	pool, err := postgres.NewPool(context.Background(), postgres.PoolConfig{
		DSN: d.DSN(role), ExpectRole: expect, MaxConns: 4, ApplicationName: "pgtest",
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// Conn opens one superuser connection to the test database, closed when the
// test ends.
func (d *DB) Conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := d.Cluster.Connect(context.Background(), d.Name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func logf(format string, args ...any) {
	if os.Getenv("QL3_PGTEST_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
