package publication

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/errs"
)

const apiTokenColumns = `token_id, name, status, created_at_ms, coalesce(expires_at_ms, 0), coalesce(revoked_at_ms, 0), scopes,
	status = 'active' AND (expires_at_ms IS NULL OR expires_at_ms > ` + dbNowMs + `)`

func scanAPIToken(row pgx.Row) (controlplane.APIToken, error) {
	var t controlplane.APIToken
	err := row.Scan(&t.ID, &t.Name, &t.Status, &t.CreatedAtMs, &t.ExpiresAtMs, &t.RevokedAtMs, &t.Scopes, &t.Live)
	return t, err
}

// MaxAPITokenTTLMs bounds a token's lifetime when one is given.
const MaxAPITokenTTLMs = 10 * 366 * 24 * 3600 * 1000

// CreateAPIToken creates an admin-scoped API token named name, valid for
// ttlMs (0: until revoked), and returns it with its text: show the text once.
func (p *Publisher) CreateAPIToken(ctx context.Context, name string, ttlMs int64) (controlplane.APIToken, string, error) {
	return p.CreateScopedAPIToken(ctx, name, []string{string(access.Admin)}, ttlMs)
}

// MaxLiveAPITokens bounds the live tokens (ADR 0049, 0060).
const MaxLiveAPITokens = 256

// CreateScopedAPIToken creates a token holding scopes (core/access's
// native scopes, ADR 0060).
func (p *Publisher) CreateScopedAPIToken(ctx context.Context, name string, scopes []string, ttlMs int64) (controlplane.APIToken, string, error) {
	if err := checkPubName("name", &name); err != nil {
		return controlplane.APIToken{}, "", err
	}
	if _, err := access.ParseScopes("scopes", scopes); err != nil {
		return controlplane.APIToken{}, "", err
	}
	if ttlMs < 0 || ttlMs > MaxAPITokenTTLMs {
		return controlplane.APIToken{}, "", errs.Invalidf("ttlMs", "must be 0 (no expiry) or up to %d, got %d", int64(MaxAPITokenTTLMs), ttlMs)
	}
	token, id, digest, err := postgres.NewAPIToken()
	if err != nil {
		return controlplane.APIToken{}, "", err
	}
	var ttl any
	if ttlMs > 0 {
		ttl = ttlMs
	}
	var out controlplane.APIToken
	err = postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM ql3.api_tokens WHERE status = 'active'
			AND (expires_at_ms IS NULL OR expires_at_ms > `+dbNowMs+`)`).Scan(&live); err != nil {
			return err
		}
		if live >= MaxLiveAPITokens {
			return errs.E(errs.Conflict, "name", "at most %d live API tokens: revoke one first", MaxLiveAPITokens)
		}
		var err error
		out, err = scanAPIToken(tx.QueryRow(ctx, `INSERT INTO ql3.api_tokens (token_id, name, token_digest, status, created_at_ms, expires_at_ms, scopes)
			VALUES ($1, $2, $3, 'active', `+dbNowMs+`, `+dbNowMs+` + $4::bigint, $5) RETURNING `+apiTokenColumns, id, name, digest[:], ttl, scopes))
		if err != nil {
			return err
		}
		return InsertAudit(ctx, tx, AuditTokenCreate, "api_token", out.ID, map[string]any{"name": out.Name, "expiresAtMs": out.ExpiresAtMs, "scopes": out.Scopes})
	})
	if err != nil {
		return controlplane.APIToken{}, "", pubReadErr(err)
	}
	return out, token, nil
}

// AuthenticateAPIToken returns the active, unexpired token whose text is
// token. Every failure is the same unauthorized error, so a caller learns
// nothing about which part was wrong.
func (p *Publisher) AuthenticateAPIToken(ctx context.Context, token string) (controlplane.APIToken, error) {
	denied := errs.E(errs.Unauthorized, "Authorization", "invalid or revoked API token")
	id, digest, err := postgres.ParseAPIToken(token)
	if err != nil {
		return controlplane.APIToken{}, denied
	}
	var stored []byte
	var t controlplane.APIToken
	err = p.db.QueryRow(ctx, `SELECT `+apiTokenColumns+`, token_digest
		FROM ql3.api_tokens WHERE token_id = $1`, id).
		Scan(&t.ID, &t.Name, &t.Status, &t.CreatedAtMs, &t.ExpiresAtMs, &t.RevokedAtMs, &t.Scopes, &t.Live, &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.APIToken{}, denied
	}
	if err != nil {
		return controlplane.APIToken{}, pubReadErr(err)
	}
	if subtle.ConstantTimeCompare(stored, digest[:]) != 1 || !t.Live {
		return controlplane.APIToken{}, denied
	}
	return t, nil
}

// RevokeAPIToken revokes a token by id; revoking twice is a no-op.
func (p *Publisher) RevokeAPIToken(ctx context.Context, id string) (controlplane.APIToken, error) {
	var t controlplane.APIToken
	err := postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		t, err = scanAPIToken(tx.QueryRow(ctx, `UPDATE ql3.api_tokens
			SET status = 'revoked', revoked_at_ms = coalesce(revoked_at_ms, `+dbNowMs+`)
			WHERE token_id = $1 RETURNING `+apiTokenColumns, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no API token %.32q", id)
		}
		if err != nil {
			return err
		}
		return InsertAudit(ctx, tx, AuditTokenRevoke, "api_token", t.ID, map[string]any{"name": t.Name})
	})
	if err != nil {
		return controlplane.APIToken{}, pubReadErr(err)
	}
	return t, nil
}

// ListAPITokens returns every token, newest first (never their digests).
func (p *Publisher) ListAPITokens(ctx context.Context) ([]controlplane.APIToken, error) {
	rows, err := p.db.Query(ctx, `SELECT `+apiTokenColumns+` FROM ql3.api_tokens ORDER BY created_at_ms DESC, token_id LIMIT 1000`)
	if err != nil {
		return nil, pubReadErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.APIToken, error) { return scanAPIToken(r) })
	if out == nil {
		out = []controlplane.APIToken{}
	}
	return out, pubReadErr(err)
}
