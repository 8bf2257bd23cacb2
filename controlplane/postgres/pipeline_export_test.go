package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RunPipelineForTest runs sql as one pipelined transaction (see
// RunPipeline), discarding its rows.
func RunPipelineForTest(ctx context.Context, conn *pgxpool.Conn, begin, sql string) (int, error) {
	return RunPipeline(ctx, conn, PipedTx{Begin: begin, SQL: sql, Read: func(rows pgx.Rows) error {
		for rows.Next() {
		}
		return rows.Err()
	}})
}
