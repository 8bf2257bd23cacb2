// Package pipetx runs the dispatcher's pipelined transactions (ADR 0009,
// ADR 0031): BEGIN travels with the first batch of reads and locks, and
// the one writing statement travels with COMMIT, so an ack, a log chunk or
// a completion is two round trips, a claiming pull three and a renewal one.
// Every operation is idempotent on an exact retry (replays rebuild or
// answer the same result), so a failure whose commit outcome is unknown is
// safe for the worker to repeat.
package pipetx

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ql3/ql3/controlplane/postgres"
)

// Tx is one transaction on a pooled connection of its own.
type Tx struct {
	conn      *pgx.Conn
	begun     bool
	committed bool
}

func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}

func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

// Begin sends BEGIN, the plan settings and b as one pipeline; the results
// of the first two are consumed. The settings are the scheduler's
// (postgres.PlanSettingsSQL): generic plans, because planning these statements
// costs several times executing them (measured: the candidate page plans
// in ~1.3 ms cold and runs in ~0.1 ms) and their plans do not depend on
// the values; no sequential scans, because everything is reached through
// an index by design and a plan made while a table was tiny must not stick.
func (t *Tx) Begin(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	full := &pgx.Batch{}
	full.Queue("BEGIN")
	full.Queue(postgres.PlanSettingsSQL)
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	t.begun = true
	br := t.conn.SendBatch(ctx, full)
	for range 2 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	return br, nil
}

// CommitWith sends sql and COMMIT as one pipeline; scan reads sql's row.
// An error from scan (or the statement) leaves COMMIT unexecuted (the
// server skips the rest of a failed pipeline) and the runner rolls back.
func (t *Tx) CommitWith(ctx context.Context, scan func(pgx.Row) error, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue("COMMIT")
	br := t.conn.SendBatch(ctx, b)
	if err := scan(br.QueryRow()); err != nil {
		_ = br.Close()
		return err
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	if err := br.Close(); err != nil {
		return err
	}
	t.committed = true
	return nil
}

// MarkCommitted records that the caller's own pipeline committed.
func (t *Tx) MarkCommitted() { t.committed = true }

// Run runs fn as one transaction (READ COMMITTED) on a connection of db
// and commits it unless fn already did (CommitWith). A retryable failure
// (deadlock) re-runs fn a bounded number of times with a short jittered
// backoff.
func Run(ctx context.Context, db postgres.Acquirer, fn func(ctx context.Context, t *Tx) error) error {
	var err error
	for i := range 5 {
		if i > 0 {
			timer := time.NewTimer(rand.N(min(time.Millisecond<<i, 50*time.Millisecond)) + time.Millisecond)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
		}
		if err = txOnce(ctx, db, fn); err == nil || !postgres.IsRetryable(err) {
			return err
		}
	}
	return err
}

func txOnce(ctx context.Context, db postgres.Acquirer, fn func(ctx context.Context, t *Tx) error) error {
	c, err := db.Acquire(ctx)
	if err != nil {
		return postgres.Translate(err)
	}
	t := &Tx{conn: c.Conn()}
	defer func() {
		if t.begun && !t.committed {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postgres.RollbackTimeout)
			if _, err := t.conn.Exec(rctx, "ROLLBACK"); err != nil {
				// The connection cannot be trusted: drop it.
				_ = t.conn.Close(rctx)
			}
			cancel()
		}
		c.Release()
	}()
	if err := fn(ctx, t); err != nil {
		return postgres.TranslateDriver(err)
	}
	if t.begun && !t.committed {
		if _, err := t.conn.Exec(ctx, "COMMIT"); err != nil {
			return postgres.Translate(err)
		}
		t.committed = true
	}
	return nil
}
