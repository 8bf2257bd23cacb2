package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolConfig configures one role's connection pool. The control plane keeps
// one pool per role (runtime, admin, ingress) so a bug in one path can never
// borrow another path's privileges.
type PoolConfig struct {
	// DSN in any form pgx accepts (URL or key=value).
	DSN string
	// ExpectRole, when set, is checked against current_user on every new
	// connection; a pool connected as the wrong role fails to connect.
	ExpectRole string
	// MaxConns bounds the pool; 0 means 8.
	MaxConns int32
	// ApplicationName is reported in pg_stat_activity; "" means "ql3".
	ApplicationName string
	// StatementTimeout bounds every statement server-side; 0 means 30 s,
	// negative disables.
	StatementTimeout time.Duration
	// IdleInTransactionTimeout ends sessions idle inside a transaction (a
	// stuck caller holding row locks); 0 means 60 s, negative disables.
	IdleInTransactionTimeout time.Duration
}

// NewPool opens a pgx pool for cfg. Sessions get an empty search_path (all
// ql3 SQL is schema-qualified), the configured timeouts and, when ExpectRole
// is set, a role check. It does not wait for a first connection; call
// pool.Ping to fail fast.
func NewPool(ctx context.Context, cfg PoolConfig) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		// pgx echoes the DSN (with any password) in parse errors: do not wrap it.
		return nil, errors.New("postgres: invalid DSN")
	}
	pc.MaxConns = cfg.MaxConns
	if pc.MaxConns <= 0 {
		pc.MaxConns = 8
	}
	app := cfg.ApplicationName
	if app == "" {
		app = "ql3"
	}
	rp := pc.ConnConfig.RuntimeParams
	rp["application_name"] = app
	rp["search_path"] = ""
	if ms := durationMs(cfg.StatementTimeout, 30*time.Second); ms >= 0 {
		rp["statement_timeout"] = strconv.FormatInt(ms, 10)
	}
	if ms := durationMs(cfg.IdleInTransactionTimeout, 60*time.Second); ms >= 0 {
		rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(ms, 10)
	}
	// A cancelled context cancels the running statement on the server (a
	// cancel request) before the connection is given up (after
	// cancelDeadlineDelay). The scheduler pipelines COMMIT behind its
	// statements: closing the socket alone would leave a statement blocked
	// on a lock to finish and then commit, long after its caller gave up
	// (TestStopIsBoundedWhileARoundIsStuck saw exactly that). Cancelled, it
	// fails with 57014 and the server skips the pipeline's COMMIT.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelDeadlineDelay}
	}
	if cfg.ExpectRole != "" {
		want := cfg.ExpectRole
		pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			var got string
			if err := c.QueryRow(ctx, "SELECT current_user").Scan(&got); err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("postgres: pool expects role %s, connected as %s", want, got)
			}
			return nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, errorf(err, "postgres: open pool")
	}
	return pool, nil
}

// cancelDeadlineDelay is how long a cancelled operation waits for the
// server to answer the cancel request before the connection is closed.
const cancelDeadlineDelay = 2 * time.Second

// durationMs returns d in ms, def when d is 0, and -1 when d is negative.
func durationMs(d, def time.Duration) int64 {
	switch {
	case d < 0:
		return -1
	case d == 0:
		return def.Milliseconds()
	}
	return d.Milliseconds()
}

// TxOptions configures InTx.
type TxOptions struct {
	pgx.TxOptions
	// MaxAttempts bounds how often a retryable failure (serialization
	// failure, deadlock, lock timeout) re-runs the transaction; 0 means 5.
	MaxAttempts int
}

// Serializable is the option set admission and publication use.
var Serializable = TxOptions{TxOptions: pgx.TxOptions{IsoLevel: pgx.Serializable}}

// InTx runs fn in a transaction and commits it. When the server rolls the
// transaction back for a retryable reason, the whole function runs again (so
// fn must not have effects outside the transaction), at most MaxAttempts
// times, with a short jittered backoff. The returned error is translated
// (Translate); an error fn returns that is not a driver error is returned
// as is.
func InTx(ctx context.Context, db interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, opts TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = 5
	}
	var err error
	for i := range attempts {
		if i > 0 {
			// Full jitter, 1 ms doubling, capped at 50 ms: conflicts between
			// replicas clear quickly; a long wait only adds latency.
			backoff := min(time.Millisecond<<i, 50*time.Millisecond)
			t := time.NewTimer(rand.N(backoff) + time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		err = runTxOnce(ctx, db, opts.TxOptions, fn)
		if err == nil || !IsRetryable(err) {
			return err
		}
	}
	return err
}

func runTxOnce(ctx context.Context, db interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return Translate(err)
	}
	if err := fn(ctx, tx); err != nil {
		_ = tx.Rollback(ctx)
		return translateDriver(err)
	}
	return translateDriver(tx.Commit(ctx))
}

// translateDriver translates errors that came from the driver and leaves
// application errors (already coded, or plain) untouched.
func translateDriver(err error) error {
	if err == nil {
		return nil
	}
	if SQLState(err) != "" || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, pgx.ErrTxClosed) {
		return Translate(err)
	}
	return err
}

// TranslateDriver is translateDriver for the adapter's subpackages.
func TranslateDriver(err error) error { return translateDriver(err) }
