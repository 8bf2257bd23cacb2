package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func insertProject(ctx context.Context, t *testing.T, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, name string) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	if _, err := db.Exec(ctx, `INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms)
		VALUES ($1, $2, 'active', 1, 1)`, id, name); err != nil {
		t.Fatalf("insert project %s: %v", name, err)
	}
	return id
}

func countProjects(ctx context.Context, t *testing.T, conn *pgx.Conn, name string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM ql3.projects WHERE name = $1", name).Scan(&n); err != nil {
		t.Fatalf("count projects: %v", err)
	}
	return n
}

// The standby story of issue 4: write on the primary, read it on the
// standby, promote, write on the new primary.
func TestStandbyPromote(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	primary := pgtest.NewCluster(t)
	t.Logf("primary started in %v", pgtest.LastStartDuration().Round(time.Millisecond))
	db := primary.NewDB(t)

	t0 := time.Now()
	standby := primary.StartStandby(t)
	t.Logf("standby started in %v", time.Since(t0).Round(time.Millisecond))
	if rec, err := standby.IsStandby(ctx); err != nil || !rec {
		t.Fatalf("standby in recovery = %v, %v; want true", rec, err)
	}

	admin := db.Pool(t, postgres.RoleAdmin)
	insertProject(ctx, t, admin, "before-promotion")
	if err := primary.WaitReplayed(ctx, standby); err != nil {
		t.Fatal(err)
	}
	sconn, err := standby.Connect(ctx, db.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer sconn.Close(ctx)
	if n := countProjects(ctx, t, sconn, "before-promotion"); n != 1 {
		t.Fatalf("standby sees %d rows written on the primary, want 1", n)
	}
	_, err = sconn.Exec(ctx, `INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms)
		VALUES ($1, 'on-standby', 'active', 1, 1)`, uuid.Must(uuid.NewV7()))
	if got := postgres.SQLState(err); got != postgres.SQLStateReadOnlyTransaction {
		t.Fatalf("write on standby: SQLSTATE %q (%v), want %s", got, err, postgres.SQLStateReadOnlyTransaction)
	}

	// The old primary is fenced off (crashed) before promotion, as an
	// operator would do.
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("promoted in %v", time.Since(t1).Round(time.Millisecond))
	if rec, err := standby.IsStandby(ctx); err != nil || rec {
		t.Fatalf("promoted server in recovery = %v, %v; want false", rec, err)
	}
	// The LOGIN roles and their grants came along with the base backup.
	promoted := &pgtest.DB{Cluster: standby, Name: db.Name}
	insertProject(ctx, t, promoted.Pool(t, postgres.RoleAdmin), "after-promotion")
	for _, name := range []string{"before-promotion", "after-promotion"} {
		if n := countProjects(ctx, t, sconn, name); n != 1 {
			t.Errorf("new primary has %d rows named %s, want 1", n, name)
		}
	}
	// A fresh database can be cloned on the new primary as well.
	if d := standby.NewDB(t); d.Name == "" {
		t.Fatal("no database")
	}
}

func TestNewDBIsolatedAndRolesLogIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := pgtest.NewDB(t), pgtest.NewDB(t)
	if a.Name == b.Name {
		t.Fatalf("two tests got the same database %s", a.Name)
	}
	insertProject(ctx, t, a.Pool(t, postgres.RoleAdmin), "only-in-a")
	bc := b.Conn(t)
	if n := countProjects(ctx, t, bc, "only-in-a"); n != 0 {
		t.Fatalf("database b sees %d rows of database a", n)
	}
	for _, role := range postgres.Roles() {
		var user, searchPath string
		pool := a.Pool(t, role)
		if err := pool.QueryRow(ctx, "SELECT current_user, current_setting('search_path')").Scan(&user, &searchPath); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if user != role || searchPath != `""` && searchPath != "" {
			t.Errorf("%s pool: current_user=%s search_path=%q", role, user, searchPath)
		}
		if err := postgres.Readiness(ctx, pool); err != nil {
			t.Errorf("%s: readiness: %v", role, err)
		}
	}
	// Unqualified names do not resolve: every statement must say ql3.
	_, err := a.Pool(t, postgres.RoleRuntime).Exec(ctx, "SELECT 1 FROM runs")
	if got := postgres.SQLState(err); got != "42P01" {
		t.Errorf("unqualified table: SQLSTATE %q (%v), want 42P01", got, err)
	}
}

func TestTerminateBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	conn := db.Conn(t)
	pid := conn.PgConn().PID()
	if err := db.Cluster.TerminateBackend(ctx, pid); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, "SELECT 1")
	if err == nil {
		t.Fatal("query on a terminated backend succeeded")
	}
	if got := postgres.SQLState(err); got != postgres.SQLStateAdminShutdown && !conn.IsClosed() {
		t.Fatalf("after terminate: %v (SQLSTATE %q), connection open", err, got)
	}
	if err := db.Cluster.TerminateBackend(ctx, pid); err == nil {
		t.Fatal("terminating a gone backend reported success")
	}
}

// BenchmarkNewDB measures one template clone (the per-test cost).
func BenchmarkNewDB(b *testing.B) {
	pgtest.Shared(b)
	for b.Loop() {
		pgtest.NewDB(b)
	}
}

// BenchmarkStartCluster measures a private primary's start: initdb copied
// from the cache, server start, readiness, template migration, stop.
func BenchmarkStartCluster(b *testing.B) {
	for b.Loop() {
		c := pgtest.NewCluster(b)
		c.NewDB(b)
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}
