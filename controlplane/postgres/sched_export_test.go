package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RunPipelineForTest runs sql as one pipelined transaction (see
// runPipeline), discarding its rows.
func RunPipelineForTest(ctx context.Context, conn *pgxpool.Conn, begin, sql string) (int, error) {
	return runPipeline(ctx, conn, pipedTx{begin: begin, sql: sql, read: func(rows pgx.Rows) error {
		for rows.Next() {
		}
		return rows.Err()
	}})
}

// Statements exported to the external tests that check their plans.
var (
	ClaimSchedulesSQLForTest = claimSchedulesSQL
	AdmitSQLForTest          = admitSQL
	PlanSettingsSQLForTest   = planSettingsSQL
	NextDueSQLForTest        = nextDueSQL
)
