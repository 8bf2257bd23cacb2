package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
)

// Acquirer hands out pooled connections: *pgxpool.Pool satisfies it. The
// scheduler's claim and admission need a connection of their own because
// each sends a whole transaction as one pipeline.
type Acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// PlanSettingsSQL follows BEGIN in the scheduler's transactions and sets,
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
const PlanSettingsSQL = `SELECT pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true),
	pg_catalog.set_config('enable_seqscan', 'off', true)`

// PipedTx is one transaction of a pipeline: BEGIN (the full statement, with
// its isolation level), the plan settings, one statement whose rows go to
// read, and COMMIT.
type PipedTx struct {
	Begin, SQL string
	Args       []any
	Read       func(pgx.Rows) error
}

// RunPipeline sends the transactions in a single round trip and reads their
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
//     a *CommitUnknownError is returned and must never be re-run blindly.
//     The driver's SafeToRetry is not trusted here: the faultproxy test saw
//     pgconn call a failure "safe to retry" after a COMMIT had been written
//     and committed.
//
// Each statement must refuse to leave the database inconsistent (the
// admission asserts its write counts in SQL): once its rows are read, its
// COMMIT is already on its way.
func RunPipeline(ctx context.Context, conn *pgxpool.Conn, txs ...PipedTx) (committed int, err error) {
	b := &pgx.Batch{}
	for _, tx := range txs {
		b.Queue(tx.Begin)
		b.Queue(PlanSettingsSQL)
		b.Queue(tx.SQL, tx.Args...)
		b.Queue("COMMIT")
	}
	br := conn.SendBatch(ctx, b)
	for _, tx := range txs {
		if err = readPipedTx(br, tx.Read); err != nil {
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
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RollbackTimeout)
			_, _ = conn.Exec(rctx, "ROLLBACK")
			cancel()
		}
		return committed, Translate(err)
	default:
		return committed, &CommitUnknownError{err: Translate(err)}
	}
}

// PipelinedTx runs one transaction as a pipeline (see RunPipeline); nil
// means it committed.
func PipelinedTx(ctx context.Context, conn *pgxpool.Conn, begin, sql string, args []any, read func(pgx.Rows) error) error {
	_, err := RunPipeline(ctx, conn, PipedTx{Begin: begin, SQL: sql, Args: args, Read: read})
	return err
}

// BeginReadCommitted and BeginSerializable open a pipelined transaction.
const (
	BeginReadCommitted = `BEGIN ISOLATION LEVEL READ COMMITTED`
	BeginSerializable  = `BEGIN ISOLATION LEVEL SERIALIZABLE`
)

// RollbackTimeout bounds the clean-up ROLLBACK after a refused pipeline
// (dispatch uses it for its own pipelines too).
const RollbackTimeout = 5 * time.Second

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

// CommitUnknownError is controlplane.ErrCommitUnknown with its cause; it is never
// retryable, whatever the cause says.
type CommitUnknownError struct{ err error }

// CommitUnknown wraps err as a CommitUnknownError.
func CommitUnknown(err error) error { return &CommitUnknownError{err: err} }

func (e *CommitUnknownError) Error() string {
	return controlplane.ErrCommitUnknown.Error() + ": " + e.err.Error()
}
func (e *CommitUnknownError) Is(target error) bool { return target == controlplane.ErrCommitUnknown }

// Unwrap exposes the coded error only (its Retryable flag is cleared).
func (e *CommitUnknownError) Unwrap() error {
	var te *Error
	if errors.As(e.err, &te) {
		c := *te
		c.Retryable = false
		return &c
	}
	return e.err
}
