package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/signin"
	"github.com/ql3/ql3/edge"
)

// CreateUser implements edge.AccessStore.
func (s *Store) CreateUser(ctx context.Context, username, passwordHash string) (edge.User, error) {
	now := s.clock.Now().UnixMilli()
	u := edge.User{Username: username, PasswordHash: passwordHash, CreatedAtMs: now, UpdatedAtMs: now}
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		var n, exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE username = ?) FROM users`, username).Scan(&n, &exists); err != nil {
			return err
		}
		if exists > 0 {
			return errs.E(errs.Conflict, "username", "user %.64q exists", username)
		}
		if n >= edge.MaxUsers {
			return errs.TooLargef("users", "at most %d accounts", edge.MaxUsers)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO users (username, password_hash, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?)`,
			username, passwordHash, now, now)
		return err
	})
	return u, err
}

const userColumns = `username, password_hash, totp_secret, totp_last_counter, failures, locked_until_ms, created_at_ms, updated_at_ms`

func scanUser(sc scanner) (edge.User, error) {
	var u edge.User
	var counter int64
	err := sc.Scan(&u.Username, &u.PasswordHash, &u.TOTPSecret, &counter, &u.Lock.Failures, &u.Lock.LockedUntil, &u.CreatedAtMs, &u.UpdatedAtMs)
	u.TOTPLastCounter = uint64(counter)
	return u, err
}

// GetUser implements edge.AccessStore.
func (s *Store) GetUser(ctx context.Context, username string) (edge.User, error) {
	u, err := scanUser(s.reader.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE username = ?`, username))
	if errors.Is(err, sql.ErrNoRows) {
		return u, errs.NotFoundf("user %.64q not found", username)
	}
	return u, translate(err)
}

// ListUsers implements edge.AccessStore.
func (s *Store) ListUsers(ctx context.Context) ([]edge.User, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+userColumns+` FROM users ORDER BY username LIMIT ?`, edge.MaxUsers)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []edge.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, u)
	}
	return out, translate(rows.Err())
}

// DeleteUser implements edge.AccessStore.
func (s *Store) DeleteUser(ctx context.Context, username string) error {
	return s.updateUser(ctx, username, `DELETE FROM users WHERE username = ?`, username)
}

// SetPassword implements edge.AccessStore; it also lifts a lock.
func (s *Store) SetPassword(ctx context.Context, username, passwordHash string) error {
	return s.updateUser(ctx, username, `UPDATE users SET password_hash = ?, failures = 0, locked_until_ms = 0, updated_at_ms = ?
        WHERE username = ?`, passwordHash, s.clock.Now().UnixMilli(), username)
}

// SetTOTP implements edge.AccessStore.
func (s *Store) SetTOTP(ctx context.Context, username, secret string) error {
	return s.updateUser(ctx, username, `UPDATE users SET totp_secret = ?, totp_last_counter = 0, updated_at_ms = ?
        WHERE username = ?`, secret, s.clock.Now().UnixMilli(), username)
}

func (s *Store) updateUser(ctx context.Context, username, query string, args ...any) error {
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("user %.64q not found", username)
		}
		return nil
	})
}

// RecordSignIn implements edge.AccessStore.
func (s *Store) RecordSignIn(ctx context.Context, ev edge.SignInEvent, lock signin.State, totpCounter uint64) error {
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		if ev.Outcome != edge.SignInUnknownUser {
			q := `UPDATE users SET failures = ?, locked_until_ms = ? WHERE username = ?`
			args := []any{lock.Failures, lock.LockedUntil, ev.Username}
			if totpCounter != 0 {
				q = `UPDATE users SET failures = ?, locked_until_ms = ?, totp_last_counter = ? WHERE username = ?`
				args = []any{lock.Failures, lock.LockedUntil, int64(totpCounter), ev.Username}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		// The log keeps the newest 10,000 lines.
		if _, err := tx.ExecContext(ctx, `DELETE FROM signin_log WHERE seq <= (SELECT max(seq) FROM signin_log) - 10000`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO signin_log (at_ms, username, outcome, remote) VALUES (?, ?, ?, ?)`,
			ev.AtMs, truncateUTF8(ev.Username, 64), ev.Outcome, truncateUTF8(ev.Remote, 64))
		return err
	})
}

// ListSignIns implements edge.AccessStore: newest first, below beforeSeq
// when it is not 0.
func (s *Store) ListSignIns(ctx context.Context, beforeSeq int64, limit int) ([]edge.SignInEvent, error) {
	if limit <= 0 || limit > edge.MaxSignInPage {
		return nil, errs.Invalidf("limit", "must be 1..%d, got %d", edge.MaxSignInPage, limit)
	}
	if beforeSeq <= 0 {
		beforeSeq = 1 << 62
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT seq, at_ms, username, outcome, remote FROM signin_log
        WHERE seq < ? ORDER BY seq DESC LIMIT ?`, beforeSeq, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []edge.SignInEvent{}
	for rows.Next() {
		var e edge.SignInEvent
		if err := rows.Scan(&e.Seq, &e.AtMs, &e.Username, &e.Outcome, &e.Remote); err != nil {
			return nil, translate(err)
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}
