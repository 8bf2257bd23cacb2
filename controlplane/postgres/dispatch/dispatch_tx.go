package dispatch

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ql3/ql3/controlplane/postgres/pipetx"
)

// querier is what the transaction bodies use: a *dtx, or any pgx.Tx.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// dtx is one dispatcher transaction (postgres/pipetx: BEGIN travels with
// the first reads, the write with COMMIT; ADR 0009).
type dtx = pipetx.Tx

// inTx runs fn as one transaction, retrying deadlocks (pipetx.Run).
func (d *Dispatcher) inTx(ctx context.Context, fn func(ctx context.Context, t *dtx) error) error {
	return pipetx.Run(ctx, d.db, fn)
}
