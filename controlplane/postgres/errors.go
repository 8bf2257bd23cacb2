package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ql3/ql3/core/errs"
)

// SQLSTATE codes this package interprets.
const (
	SQLStateSerializationFailure = "40001"
	SQLStateDeadlockDetected     = "40P01"
	SQLStateLockNotAvailable     = "55P03"
	SQLStateUniqueViolation      = "23505"
	SQLStateForeignKeyViolation  = "23503"
	SQLStateCheckViolation       = "23514"
	SQLStateNotNullViolation     = "23502"
	SQLStateExclusionViolation   = "23P01"
	SQLStateInsufficientPriv     = "42501"
	SQLStateReadOnlyTransaction  = "25006"
	SQLStateQueryCanceled        = "57014"
	SQLStateAdminShutdown        = "57P01"
	SQLStateCrashShutdown        = "57P02"
	SQLStateCannotConnectNow     = "57P03"
	// SQLStateInvalidTextRepresentation is what the admission's and the
	// sweep's write-count assertions raise.
	SQLStateInvalidTextRepresentation = "22P02"
)

// Error is a driver error translated at the adapter edge. It unwraps to both
// the coded *errs.Error (so errs.Code works and the HTTP layer can map it
// without knowing about PostgreSQL) and the original driver error (so
// errors.As(err, **pgconn.PgError) still works for callers that care).
type Error struct {
	Coded      *errs.Error
	SQLState   string // "" when the error did not come from the server
	Constraint string // the violated constraint, when the server named one
	// Retryable is true when the transaction was rolled back by the server
	// for a reason that re-running it can fix (serialization failure,
	// deadlock, lock timeout). It is never set for errors whose commit
	// outcome is unknown, such as a connection lost during COMMIT.
	Retryable bool
	Err       error
}

func (e *Error) Error() string { return e.Coded.Error() }

// Unwrap exposes both the coded error and the driver error.
func (e *Error) Unwrap() []error { return []error{e.Coded, e.Err} }

// IsRetryable reports whether err (translated or not) is a server-side
// rollback that a bounded retry of the whole transaction may fix.
func IsRetryable(err error) bool {
	var te *Error
	if errors.As(err, &te) {
		return te.Retryable
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return retryableState(pe.Code)
	}
	return false
}

// SQLState returns the SQLSTATE of the first PostgreSQL error in err's chain,
// or "".
func SQLState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func retryableState(code string) bool {
	switch code {
	case SQLStateSerializationFailure, SQLStateDeadlockDetected, SQLStateLockNotAvailable:
		return true
	}
	return false
}

// Translate maps a pgx error to a coded error:
//
//	pgx.ErrNoRows                   → not_found
//	serialization failure, deadlock,
//	lock not available               → unavailable, Retryable
//	unique / exclusion violation     → conflict (constraint named)
//	foreign key violation            → conflict (a referenced row is missing or still referenced)
//	check / not-null violation       → invalid (field = constraint or column)
//	read-only transaction, shutdown,
//	cannot connect, connection loss  → unavailable
//	anything else                    → internal
//
// nil stays nil; context cancellation and deadline errors are returned
// unchanged so callers keep seeing context.Canceled. Translating an already
// translated error returns it unchanged. Messages name constraints, never
// row values.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &Error{Coded: errs.NotFoundf("not found"), Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return translatePgError(pe, err)
	}
	if pgconn.SafeToRetry(err) {
		// The request never reached the server, so nothing was done.
		return &Error{Coded: errs.E(errs.Unavailable, "", "database unavailable"), Retryable: true, Err: err}
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return &Error{Coded: errs.E(errs.Unavailable, "", "database unavailable"), Err: err}
	}
	return &Error{Coded: errs.E(errs.Internal, "", "database error"), Err: err}
}

func translatePgError(pe *pgconn.PgError, err error) error {
	te := &Error{SQLState: pe.Code, Constraint: pe.ConstraintName, Err: err}
	switch {
	case retryableState(pe.Code):
		te.Retryable = true
		te.Coded = errs.E(errs.Unavailable, "", "concurrent update, retry the request (SQLSTATE %s)", pe.Code)
	case pe.Code == SQLStateUniqueViolation || pe.Code == SQLStateExclusionViolation:
		te.Coded = errs.Conflictf("already exists (constraint %s)", pe.ConstraintName)
	case pe.Code == SQLStateForeignKeyViolation:
		te.Coded = errs.Conflictf("referenced row missing or still referenced (constraint %s)", pe.ConstraintName)
	case pe.Code == SQLStateCheckViolation:
		te.Coded = errs.Invalidf(pe.ConstraintName, "violates check constraint %s", pe.ConstraintName)
	case pe.Code == SQLStateNotNullViolation:
		te.Coded = errs.Invalidf(pe.ColumnName, "must not be null")
	case pe.Code == SQLStateReadOnlyTransaction, pe.Code == SQLStateCannotConnectNow,
		pe.Code == SQLStateAdminShutdown, pe.Code == SQLStateCrashShutdown,
		len(pe.Code) == 5 && pe.Code[:2] == "08":
		te.Coded = errs.E(errs.Unavailable, "", "database unavailable (SQLSTATE %s)", pe.Code)
	default:
		te.Coded = errs.E(errs.Internal, "", "database error (SQLSTATE %s)", pe.Code)
	}
	return te
}

// errorf wraps a translated cause with context for logs while keeping the
// coded error reachable through errors.As.
func errorf(cause error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), Translate(cause))
}

// Errorf is errorf for the adapter's subpackages: a translated driver error
// with context, keeping its code.
func Errorf(cause error, format string, args ...any) error { return errorf(cause, format, args...) }
