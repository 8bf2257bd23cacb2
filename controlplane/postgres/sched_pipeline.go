package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Acquirer hands out pooled connections: *pgxpool.Pool satisfies it. The
// scheduler's claim and admission need a connection of their own because
// each sends a whole transaction as one pipeline.
type Acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// planSettingsSQL follows BEGIN in the scheduler's transactions and sets,
// for that transaction only:
//
//   - plan_cache_mode = force_generic_plan. The statements are large CTEs
//     (planning the claim cost ~0.2 ms and the admission ~2 ms, against
//     0.2–1 ms to execute them) whose plans do not depend on the parameter
//     values: every row is reached through an index from the input
//     (admission) or from the start of the due index up to the budget
//     (claim). PostgreSQL's plan cache otherwise kept re-planning the claim
//     every round (its LIMIT is a parameter).
//   - enable_seqscan = off. Everything the scheduler reads is reached
//     through an index by design, and a sequential scan is wrong twice over
//     here: under SERIALIZABLE it takes a predicate lock on the whole
//     relation, which conflicts with every concurrent admission; and a plan
//     made while a table was tiny stays cached in the session until the next
//     ANALYZE. That happened to the foreign-key checks on runs: autovacuum
//     analyses a fresh runs table at ~50 rows, the checks' plans flipped to
//     sequential scans for up to a minute (autovacuum_naptime) while the
//     table grew by thousands of rows a second, and admissions went from 2 to
//     24 ms with 0.05 serialization retries per Run. The setting also
//     governs the foreign-key checks, which are planned inside these
//     transactions. It only penalises, never forbids: a table without a
//     usable index is still scanned.
//
// TestClaimPlanReadsOnlyTheDuePrefix and TestSchedulerPlansAvoidSeqScans pin
// the plans under these settings.
const planSettingsSQL = `SELECT pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true),
	pg_catalog.set_config('enable_seqscan', 'off', true)`

// pipelinedTx sends BEGIN (begin is the full statement, with its isolation
// level), the plan settings, one statement and COMMIT in a single round
// trip, and hands the statement's rows to read. It returns nil only when
// COMMIT succeeded.
//
// Failure classes, which is why the caller must look at the result:
//   - the server refused a statement (an error carrying a SQLSTATE, from
//     BEGIN up to and including COMMIT): PostgreSQL skips the rest of the
//     pipeline, so nothing committed. The session is rolled back here and
//     the translated error returned (retryable for serialization failures).
//   - anything else once the pipeline was handed to the driver (the
//     connection broke, the context ended, read failed on a row): the
//     server may have run everything up to and including COMMIT, so the
//     outcome is unknown; a *commitUnknownError is returned and must never
//     be re-run blindly. The driver's SafeToRetry is not trusted here: the
//     faultproxy test saw pgconn call a failure "safe to retry" after a
//     COMMIT had been written and committed.
//
// The statement itself must refuse to leave the database inconsistent (the
// admission asserts its write counts in SQL): once the rows are read, COMMIT
// is already on its way.
func pipelinedTx(ctx context.Context, conn *pgxpool.Conn, begin, sql string, args []any, read func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue(planSettingsSQL)
	b.Queue(sql, args...)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	err := readPipelined(br, read)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil:
		return nil
	case SQLState(err) != "":
		// Leave the session idle for the pool. If this fails too, the pool
		// destroys the connection on release (it is not idle).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		cancel()
		return Translate(err)
	default:
		return &commitUnknownError{err: Translate(err)}
	}
}

// rollbackTimeout bounds the clean-up ROLLBACK after a refused pipeline.
const rollbackTimeout = 5 * time.Second

func readPipelined(br pgx.BatchResults, read func(pgx.Rows) error) error {
	for range 2 { // BEGIN, plan settings
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	err = read(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return err
	}
	_, err = br.Exec() // COMMIT
	return err
}
