package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

func TestTranslateWithoutServer(t *testing.T) {
	if postgres.Translate(nil) != nil {
		t.Fatal("nil translated to an error")
	}
	for _, err := range []error{context.Canceled, fmt.Errorf("query: %w", context.DeadlineExceeded)} {
		if got := postgres.Translate(err); got != err {
			t.Errorf("Translate(%v) = %v, want it unchanged", err, got)
		}
	}
	nr := postgres.Translate(fmt.Errorf("get run: %w", pgx.ErrNoRows))
	if errs.Code(nr) != errs.NotFound || !errors.Is(nr, pgx.ErrNoRows) {
		t.Errorf("ErrNoRows → %v (code %q), want not_found wrapping pgx.ErrNoRows", nr, errs.Code(nr))
	}
	if again := postgres.Translate(nr); again != nr {
		t.Error("translating twice changed the error")
	}
	cases := []struct {
		pg        *pgconn.PgError
		code      string
		retryable bool
	}{
		{&pgconn.PgError{Code: "40001"}, errs.Unavailable, true},
		{&pgconn.PgError{Code: "40P01"}, errs.Unavailable, true},
		{&pgconn.PgError{Code: "55P03"}, errs.Unavailable, true},
		{&pgconn.PgError{Code: "23505", ConstraintName: "runs_project_id_idempotency_key_key"}, errs.Conflict, false},
		{&pgconn.PgError{Code: "23503", ConstraintName: "runs_project_id_fkey"}, errs.Conflict, false},
		{&pgconn.PgError{Code: "23514", ConstraintName: "runs_status_check"}, errs.Invalid, false},
		{&pgconn.PgError{Code: "23502", ColumnName: "name"}, errs.Invalid, false},
		{&pgconn.PgError{Code: "25006"}, errs.Unavailable, false},
		{&pgconn.PgError{Code: "57P01"}, errs.Unavailable, false},
		{&pgconn.PgError{Code: "08006"}, errs.Unavailable, false},
		{&pgconn.PgError{Code: "42501"}, errs.Internal, false},
		{&pgconn.PgError{Code: "42P01"}, errs.Internal, false},
	}
	for _, tc := range cases {
		err := postgres.Translate(tc.pg)
		var te *postgres.Error
		if !errors.As(err, &te) || te.SQLState != tc.pg.Code {
			t.Errorf("%s: %v is not a *postgres.Error carrying the SQLSTATE", tc.pg.Code, err)
			continue
		}
		if errs.Code(err) != tc.code || postgres.IsRetryable(err) != tc.retryable {
			t.Errorf("%s: code %q retryable %v, want %q %v", tc.pg.Code, errs.Code(err), postgres.IsRetryable(err), tc.code, tc.retryable)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe != tc.pg {
			t.Errorf("%s: the driver error is not reachable", tc.pg.Code)
		}
		if postgres.IsRetryable(tc.pg) != tc.retryable {
			t.Errorf("%s: IsRetryable on the raw error = %v", tc.pg.Code, !tc.retryable)
		}
	}
	if f := errs.Field(postgres.Translate(&pgconn.PgError{Code: "23514", ConstraintName: "runs_status_check"})); f != "runs_status_check" {
		t.Errorf("check violation field = %q", f)
	}
	if c := errs.Code(postgres.Translate(errors.New("boom"))); c != errs.Internal {
		t.Errorf("plain error → %q, want internal", c)
	}
}

// TestTranslateFromServer provokes each class on a real server.
func TestTranslateFromServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	fx := newFixture()
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, "BEGIN;"+fx.sql(seedSQL)+"COMMIT;"); err != nil {
		t.Fatalf("seed: %v", err)
	}
	for _, tc := range []struct {
		name, sql, code, field string
	}{
		{"unique", `INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ({N}, 'p1', 'active', 1, 1)`, errs.Conflict, ""},
		{"foreign key", `INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ({N}, {N}, 't', 1, 1, 1)`, errs.Conflict, ""},
		{"check", `UPDATE ql3.runs SET status = 'paused' WHERE run_id = {R1}`, errs.Invalid, "runs_status_check"},
		{"not null", `UPDATE ql3.runs SET idempotency_key = NULL WHERE run_id = {R1}`, errs.Invalid, "idempotency_key"},
	} {
		_, err := conn.Exec(ctx, fx.sql(tc.sql))
		err = postgres.Translate(err)
		if errs.Code(err) != tc.code || errs.Field(err) != tc.field {
			t.Errorf("%s: %v → code %q field %q, want %q %q", tc.name, err, errs.Code(err), errs.Field(err), tc.code, tc.field)
		}
	}
	var id string
	err := postgres.Translate(conn.QueryRow(ctx, "SELECT run_id::text FROM ql3.runs WHERE run_id = gen_random_uuid()").Scan(&id))
	if errs.Code(err) != errs.NotFound {
		t.Errorf("no rows → %v", err)
	}
}

// TestInTxRetriesSerializationFailures: two SERIALIZABLE transactions read
// and then update the same row; the loser gets SQLSTATE 40001 and InTx runs
// it again, so both increments land.
func TestInTxRetriesSerializationFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	pool := db.Pool(t, "")
	if _, err := pool.Exec(ctx, "CREATE TABLE public.counter (k int PRIMARY KEY, v int NOT NULL); INSERT INTO public.counter VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	var calls, serializationFailures atomic.Int32
	bothRead := make(chan struct{})
	var readOnce sync.WaitGroup
	readOnce.Add(2)
	increment := func(first *atomic.Bool) error {
		return postgres.InTx(ctx, pool, postgres.Serializable, func(ctx context.Context, tx pgx.Tx) error {
			calls.Add(1)
			var v int
			if err := tx.QueryRow(ctx, "SELECT v FROM public.counter WHERE k = 1").Scan(&v); err != nil {
				return err
			}
			if first.CompareAndSwap(true, false) {
				readOnce.Done()
				<-bothRead // both have their snapshot before either writes
			}
			_, err := tx.Exec(ctx, "UPDATE public.counter SET v = $1 WHERE k = 1", v+1)
			if postgres.SQLState(err) == postgres.SQLStateSerializationFailure {
				serializationFailures.Add(1)
			}
			return err
		})
	}
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i := range results {
		first := &atomic.Bool{}
		first.Store(true)
		wg.Go(func() { results[i] = increment(first) })
	}
	readOnce.Wait()
	close(bothRead)
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	var v int
	if err := pool.QueryRow(ctx, "SELECT v FROM public.counter WHERE k = 1").Scan(&v); err != nil || v != 2 {
		t.Fatalf("counter = %d, %v; want 2 (a lost update)", v, err)
	}
	if serializationFailures.Load() < 1 || calls.Load() < 3 {
		t.Fatalf("serialization failures %d, calls %d: the conflict was not exercised", serializationFailures.Load(), calls.Load())
	}
}

func TestInTxBoundsAndPassesThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t).Pool(t, "")

	var calls int
	err := postgres.InTx(ctx, pool, postgres.TxOptions{MaxAttempts: 3}, func(context.Context, pgx.Tx) error {
		calls++
		return &pgconn.PgError{Code: postgres.SQLStateSerializationFailure}
	})
	if calls != 3 || !postgres.IsRetryable(err) || errs.Code(err) != errs.Unavailable {
		t.Fatalf("always-conflicting fn: %d calls, err %v; want 3 calls and a retryable unavailable error", calls, err)
	}

	calls = 0
	appErr := errs.Invalidf("spec.timeoutMs", "must be positive")
	err = postgres.InTx(ctx, pool, postgres.TxOptions{}, func(context.Context, pgx.Tx) error {
		calls++
		return appErr
	})
	if calls != 1 || err != appErr {
		t.Fatalf("application error: %d calls, %v; want 1 call and the error unchanged", calls, err)
	}

	// Work done in a failed transaction is rolled back.
	_ = postgres.InTx(ctx, pool, postgres.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE TABLE public.rolled_back (id int)"); err != nil {
			return err
		}
		return errors.New("abort")
	})
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('public.rolled_back') IS NOT NULL").Scan(&exists); err != nil || exists {
		t.Fatalf("table from an aborted transaction exists = %v, %v", exists, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = postgres.InTx(cctx, pool, postgres.TxOptions{}, func(context.Context, pgx.Tx) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestNewPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)

	pool, err := postgres.NewPool(ctx, postgres.PoolConfig{DSN: db.DSN(postgres.RoleAdmin), ExpectRole: postgres.RoleRuntime})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err == nil || !strings.Contains(err.Error(), "expects role ql3_runtime") {
		t.Fatalf("pool for the wrong role: ping = %v, want a role mismatch", err)
	}

	good, err := postgres.NewPool(ctx, postgres.PoolConfig{DSN: db.DSN(postgres.RoleRuntime), ExpectRole: postgres.RoleRuntime,
		StatementTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	var stmt, idle, app string
	if err := good.QueryRow(ctx, "SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout'), current_setting('application_name')").
		Scan(&stmt, &idle, &app); err != nil {
		t.Fatal(err)
	}
	if stmt != "1500ms" || idle != "1min" || app != "ql3" {
		t.Fatalf("session settings %s %s %s, want 1500ms 1min ql3", stmt, idle, app)
	}

	const secret = "hunter2-do-not-log"
	_, err = postgres.NewPool(ctx, postgres.PoolConfig{DSN: "postgres://u:" + secret + "@host:notaport/db"})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("invalid DSN: %v (must fail without echoing the password)", err)
	}
}
