// Package accounts stores the control plane's accounts and sign-in log on
// PostgreSQL as the admin role (ADR 0060, migration 0017). Every change to
// an account is audited; sign-in attempts go to ql3.signins.
package accounts

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/password"
	"github.com/ql3/ql3/core/signin"
)

// Audit actions.
const (
	AuditCreate   = "account.create"
	AuditDelete   = "account.delete"
	AuditPassword = "account.password"
	AuditTOTPOn   = "account.totp_on"
	AuditTOTPOff  = "account.totp_off"
	AuditLocked   = "account.locked"
)

// DB is what Store needs: *pgxpool.Pool satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store implements controlplane.Accounts on an admin pool.
type Store struct{ db DB }

var _ controlplane.Accounts = (*Store)(nil)

// New returns a Store.
func New(db DB) *Store { return &Store{db: db} }

func tx(ctx context.Context, db DB, fn func(ctx context.Context, tx pgx.Tx) error) error {
	err := postgres.InTx(ctx, db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: 8}, fn)
	var coded *errs.Error
	if err == nil || errors.As(err, &coded) {
		return err
	}
	return postgres.Translate(err)
}

const columns = `username, password_hash, totp_secret, totp_last_counter, failures, locked_until_ms, created_at_ms`

func scan(row pgx.Row) (controlplane.Account, error) {
	var a controlplane.Account
	var counter int64
	err := row.Scan(&a.Username, &a.PasswordHash, &a.TOTPSecret, &counter, &a.Lock.Failures, &a.Lock.LockedUntil, &a.CreatedAtMs)
	a.TOTPLastCounter = uint64(counter)
	return a, err
}

func noAccount(username string) error { return errs.NotFoundf("no account %.64q", username) }

// CreateAccount implements controlplane.Accounts.
func (s *Store) CreateAccount(ctx context.Context, username, hash string, nowMs int64) (controlplane.Account, error) {
	if err := password.CheckUsername(username); err != nil {
		return controlplane.Account{}, err
	}
	var out controlplane.Account
	err := tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var n int
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE username = $1) > 0 FROM ql3.accounts`, username).Scan(&n, &exists); err != nil {
			return err
		}
		switch {
		case exists:
			return errs.E(errs.Conflict, "username", "an account named %.64q exists", username)
		case n >= controlplane.MaxAccounts:
			return errs.TooLargef("username", "at most %d accounts", controlplane.MaxAccounts)
		}
		var err error
		out, err = scan(tx.QueryRow(ctx, `INSERT INTO ql3.accounts (username, password_hash, created_at_ms) VALUES ($1, $2, $3)
			RETURNING `+columns, username, hash, nowMs))
		if err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, AuditCreate, "account", username, nil)
	})
	return out, err
}

// change runs one audited UPDATE or DELETE of an account.
func (s *Store) change(ctx context.Context, username, action, query string, args ...any) error {
	return tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, append([]any{username}, args...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return noAccount(username)
		}
		return publication.InsertAudit(ctx, tx, action, "account", username, nil)
	})
}

// DeleteAccount implements controlplane.Accounts.
func (s *Store) DeleteAccount(ctx context.Context, username string) error {
	return s.change(ctx, username, AuditDelete, `DELETE FROM ql3.accounts WHERE username = $1`)
}

// SetPassword implements controlplane.Accounts.
func (s *Store) SetPassword(ctx context.Context, username, hash string) error {
	return s.change(ctx, username, AuditPassword,
		`UPDATE ql3.accounts SET password_hash = $2, failures = 0, locked_until_ms = 0 WHERE username = $1`, hash)
}

// SetTOTP implements controlplane.Accounts.
func (s *Store) SetTOTP(ctx context.Context, username, secret string) error {
	action := AuditTOTPOn
	if secret == "" {
		action = AuditTOTPOff
	}
	return s.change(ctx, username, action,
		`UPDATE ql3.accounts SET totp_secret = $2, totp_last_counter = 0 WHERE username = $1`, secret)
}

// GetAccount implements controlplane.Accounts.
func (s *Store) GetAccount(ctx context.Context, username string) (controlplane.Account, error) {
	a, err := scan(s.db.QueryRow(ctx, `SELECT `+columns+` FROM ql3.accounts WHERE username = $1`, username))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, noAccount(username)
	}
	if err != nil {
		return a, postgres.Translate(err)
	}
	return a, nil
}

// ListAccounts implements controlplane.Accounts.
func (s *Store) ListAccounts(ctx context.Context) ([]controlplane.Account, error) {
	rows, err := s.db.Query(ctx, `SELECT `+columns+` FROM ql3.accounts ORDER BY username LIMIT $1`, controlplane.MaxAccounts)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Account, error) { return scan(r) })
	if err != nil {
		return nil, postgres.Translate(err)
	}
	return out, nil
}

// RecordSignIn implements controlplane.Accounts. A lock that this attempt
// starts is audited; the log keeps its newest MaxSignInLog lines.
func (s *Store) RecordSignIn(ctx context.Context, ev controlplane.SignIn, lock signin.State, counter uint64) error {
	return tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ql3.signins (at_ms, username, outcome, remote) VALUES ($1, $2, $3, $4)`,
			ev.AtMs, postgres.Clip(ev.Username, 256), ev.Outcome, postgres.Clip(ev.Remote, 128)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM ql3.signins WHERE seq <= (SELECT max(seq) FROM ql3.signins) - $1`, controlplane.MaxSignInLog); err != nil {
			return err
		}
		if ev.Outcome == controlplane.SignInUnknownUser {
			return nil
		}
		var wasLocked bool
		err := tx.QueryRow(ctx, `SELECT locked_until_ms > $2 FROM ql3.accounts WHERE username = $1`, ev.Username, ev.AtMs).Scan(&wasLocked)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE ql3.accounts SET failures = $2, locked_until_ms = $3,
			totp_last_counter = CASE WHEN $4::bigint > 0 THEN $4::bigint ELSE totp_last_counter END WHERE username = $1`,
			ev.Username, lock.Failures, lock.LockedUntil, int64(counter)); err != nil {
			return err
		}
		if !wasLocked && lock.LockedUntil > ev.AtMs {
			return publication.InsertAudit(ctx, tx, AuditLocked, "account", ev.Username, map[string]any{"lockedUntilMs": lock.LockedUntil, "remote": ev.Remote})
		}
		return nil
	})
}

// ListSignIns implements controlplane.Accounts: newest first, before
// beforeSeq when it is positive.
func (s *Store) ListSignIns(ctx context.Context, beforeSeq int64, limit int) ([]controlplane.SignIn, error) {
	if limit <= 0 || limit > 200 {
		return nil, errs.Invalidf("limit", "must be 1..200, got %d", limit)
	}
	var before any
	if beforeSeq > 0 {
		before = beforeSeq
	}
	rows, err := s.db.Query(ctx, `SELECT seq, at_ms, username, outcome, remote FROM ql3.signins
		WHERE $1::bigint IS NULL OR seq < $1 ORDER BY seq DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[controlplane.SignIn])
	if err != nil {
		return nil, postgres.Translate(err)
	}
	return out, nil
}
