package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// wtx is a writer transaction that runs the hot statements through
// statements prepared once at Open. Compiling SQL is about a third of the
// CPU of an admission otherwise; the writer has a single connection, so a
// statement prepared on it is reused by every transaction. Queries that
// are not in the prepared set run unprepared.
type wtx struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
	// appended: the transaction wrote run events (the feed's wake-up is
	// signalled after it commits).
	appended bool
}

func (w *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := w.stmts[query]; ok {
		return w.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return w.Tx.ExecContext(ctx, query, args...)
}

func (w *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := w.stmts[query]; ok {
		return w.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return w.Tx.QueryRowContext(ctx, query, args...)
}

func (w *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := w.stmts[query]; ok {
		return w.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return w.Tx.QueryContext(ctx, query, args...)
}

// hotStatements are prepared on the writer at Open: the admission path
// (scheduler and run-now) and the runner's transitions.
func hotStatements() []string {
	return []string{
		qAdvanceSchedule, qRunByKey, qTaskPolicy, qUnfinishedRun, qInsertRun, qInsertAttempt,
		qInsertEvent, qSaveRun, qLoadRun, qLoadAttempt, qTaskRevision,
		moveAttemptSQL(""), moveAttemptSQL(setAttemptRunning), moveAttemptSQL(setAttemptFinished),
		moveAttemptSQL(setAttemptCancelled), qSavepoint, qRollbackTo, qRelease,
	}
}

func prepareAll(ctx context.Context, db *sql.DB, queries []string) (map[string]*sql.Stmt, error) {
	out := make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			for _, s := range out {
				s.Close()
			}
			return nil, fmt.Errorf("prepare %.60q: %w", q, err)
		}
		out[q] = st
	}
	return out, nil
}
