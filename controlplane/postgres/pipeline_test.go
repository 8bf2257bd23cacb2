package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
)

// TestRefusedPipelineRollsBackOnlyAnOpenTransaction: a statement refused
// inside the pipelined transaction leaves the session in a failed
// transaction, which is rolled back; a refused COMMIT (here a deferred
// unique constraint, as a serialization failure at commit would be) has
// already ended the transaction, and no ROLLBACK follows it (the server
// would answer with the warning "there is no transaction in progress").
// Either way the connection goes back to the pool idle.
func TestRefusedPipelineRollsBackOnlyAnOpenTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	su := db.Conn(t)
	if _, err := su.Exec(ctx, `CREATE TABLE public.pipe_t (x int UNIQUE DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(db.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Severity+": "+n.Message)
		mu.Unlock()
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, c := range []struct{ name, sql, state string }{
		{"refused at COMMIT", `INSERT INTO public.pipe_t VALUES (1), (1)`, "23505"},
		{"refused statement", `SELECT 1 / 0`, "22012"},
	} {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := postgres.RunPipelineForTest(ctx, conn, "BEGIN ISOLATION LEVEL SERIALIZABLE", c.sql)
		status := conn.Conn().PgConn().TxStatus()
		conn.Release()
		if committed != 0 || postgres.SQLState(err) != c.state || status != 'I' {
			t.Fatalf("%s: committed %d, err %v, session status %q; want 0, SQLSTATE %s, idle", c.name, committed, err, status, c.state)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := postgres.RunPipelineForTest(ctx, conn, "BEGIN", `SELECT 1`)
	conn.Release()
	if n != 1 || err != nil {
		t.Fatalf("the pooled connection after both: %d %v", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 0 {
		t.Fatalf("server notices %q: a ROLLBACK was sent with no transaction open", notices)
	}
}
