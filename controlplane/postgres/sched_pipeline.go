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

// pipedTx is one transaction of a pipeline: BEGIN (the full statement, with
// its isolation level), the plan settings, one statement whose rows go to
// read, and COMMIT.
type pipedTx struct {
	begin, sql string
	args       []any
	read       func(pgx.Rows) error
}

// runPipeline sends the transactions in a single round trip and reads their
// results in order. It returns how many of them are known to have committed
// (their COMMIT was answered), and the error that stopped it.
//
// Failure classes, which is why the caller must look at the result:
//   - the server refused a statement (an error carrying a SQLSTATE, from a
//     BEGIN up to and including a COMMIT): PostgreSQL skips the rest of the
//     pipeline, so that transaction and every later one did not commit. The
//     session is rolled back here and the translated error returned
//     (retryable for serialization failures).
//   - anything else once the pipeline was handed to the driver (the
//     connection broke, the context ended, read failed on a row): the server
//     may have run everything up to and including the next COMMIT, so the
//     outcome of the transaction being read (and of later ones) is unknown;
//     a *commitUnknownError is returned and must never be re-run blindly.
//     The driver's SafeToRetry is not trusted here: the faultproxy test saw
//     pgconn call a failure "safe to retry" after a COMMIT had been written
//     and committed.
//
// Each statement must refuse to leave the database inconsistent (the
// admission asserts its write counts in SQL): once its rows are read, its
// COMMIT is already on its way.
func runPipeline(ctx context.Context, conn *pgxpool.Conn, txs ...pipedTx) (committed int, err error) {
	b := &pgx.Batch{}
	for _, tx := range txs {
		b.Queue(tx.begin)
		b.Queue(planSettingsSQL)
		b.Queue(tx.sql, tx.args...)
		b.Queue("COMMIT")
	}
	br := conn.SendBatch(ctx, b)
	for _, tx := range txs {
		if err = readPipedTx(br, tx.read); err != nil {
			break
		}
		committed++
	}
	// Close drains what is left; its error adds nothing: either every
	// COMMIT was answered (done, even if the connection broke afterwards;
	// the pool discards a broken connection on release) or err already says
	// what stopped the reading.
	_ = br.Close()
	switch {
	case committed == len(txs):
		return committed, nil
	case SQLState(err) != "":
		// Leave the session idle for the pool. A statement refused inside
		// the transaction leaves it failed ('E') until a ROLLBACK; a refused
		// COMMIT (a serialization failure at commit) already ended it, and a
		// ROLLBACK then only makes the server log "there is no transaction
		// in progress". The session's state after the pipeline's Sync says
		// which. If the ROLLBACK fails too, the pool destroys the connection
		// on release (it is not idle).
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			_, _ = conn.Exec(rctx, "ROLLBACK")
			cancel()
		}
		return committed, Translate(err)
	default:
		return committed, &commitUnknownError{err: Translate(err)}
	}
}

// pipelinedTx runs one transaction as a pipeline (see runPipeline); nil
// means it committed.
func pipelinedTx(ctx context.Context, conn *pgxpool.Conn, begin, sql string, args []any, read func(pgx.Rows) error) error {
	_, err := runPipeline(ctx, conn, pipedTx{begin: begin, sql: sql, args: args, read: read})
	return err
}

// rollbackTimeout bounds the clean-up ROLLBACK after a refused pipeline.
const rollbackTimeout = 5 * time.Second

func readPipedTx(br pgx.BatchResults, read func(pgx.Rows) error) error {
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
