package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
)

var _ edge.AccessStore = (*Store)(nil)

// AuditOpenEnvRead is the audit action of an Open API read of env values.
const AuditOpenEnvRead = "open.env_read"

// CreateOpenApp implements edge.AccessStore.
func (s *Store) CreateOpenApp(ctx context.Context, name string, scopes []string, clientID string, secretDigest []byte) (edge.OpenApp, error) {
	sc, err := json.Marshal(scopes)
	if err != nil {
		return edge.OpenApp{}, err
	}
	now := s.clock.Now().UnixMilli()
	var app edge.OpenApp
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM open_apps`).Scan(&n); err != nil {
			return err
		}
		if n >= edge.MaxOpenApps {
			return errs.TooLargef("apps", "at most %d Open API apps", edge.MaxOpenApps)
		}
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM open_apps WHERE name = ?`, name).Scan(&exists); err != nil {
			return err
		}
		if exists > 0 {
			return errs.E(errs.Conflict, "name", "an app named %.64q exists", name)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO open_apps (name, scopes, client_id, secret_digest, created_at_ms)
            VALUES (?, ?, ?, ?, ?)`, name, string(sc), clientID, secretDigest, now)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		app = edge.OpenApp{ID: id, Name: name, Scopes: scopes, ClientID: clientID, CreatedAtMs: now}
		return err
	})
	return app, err
}

const openAppColumns = `id, name, scopes, client_id, created_at_ms`

func scanOpenApp(sc scanner) (edge.OpenApp, error) {
	var a edge.OpenApp
	var scopes string
	if err := sc.Scan(&a.ID, &a.Name, &scopes, &a.ClientID, &a.CreatedAtMs); err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(scopes), &a.Scopes); err != nil {
		return a, errs.E(errs.Internal, "", "app %d: scopes: %v", a.ID, err)
	}
	return a, nil
}

// ListOpenApps implements edge.AccessStore.
func (s *Store) ListOpenApps(ctx context.Context) ([]edge.OpenApp, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+openAppColumns+` FROM open_apps ORDER BY id LIMIT ?`, edge.MaxOpenApps)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []edge.OpenApp{}
	for rows.Next() {
		a, err := scanOpenApp(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// DeleteOpenApp implements edge.AccessStore; its tokens go with it.
func (s *Store) DeleteOpenApp(ctx context.Context, id int64) error {
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM open_tokens WHERE app_id = ?`, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM open_apps WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("app %d not found", id)
		}
		return nil
	})
}

// OpenAppByClient implements edge.AccessStore.
func (s *Store) OpenAppByClient(ctx context.Context, clientID string) (edge.OpenApp, []byte, error) {
	row := s.reader.QueryRowContext(ctx, `SELECT `+openAppColumns+`, secret_digest FROM open_apps WHERE client_id = ?`, clientID)
	var a edge.OpenApp
	var scopes string
	var digest []byte
	err := row.Scan(&a.ID, &a.Name, &scopes, &a.ClientID, &a.CreatedAtMs, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return a, nil, errs.NotFoundf("no app with this client_id")
	}
	if err != nil {
		return a, nil, translate(err)
	}
	if err := json.Unmarshal([]byte(scopes), &a.Scopes); err != nil {
		return a, nil, errs.E(errs.Internal, "", "app %d: scopes: %v", a.ID, err)
	}
	return a, digest, nil
}

// IssueOpenToken implements edge.AccessStore.
func (s *Store) IssueOpenToken(ctx context.Context, appID int64, digest []byte, nowMs, expiresAtMs int64) error {
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM open_tokens WHERE app_id = ? AND expires_at_ms <= ?`, appID, nowMs); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM open_tokens WHERE digest IN (
            SELECT digest FROM open_tokens WHERE app_id = ? ORDER BY created_at_ms DESC, digest LIMIT -1 OFFSET ?)`,
			appID, edge.MaxOpenTokensPerApp-1); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO open_tokens (digest, app_id, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?)`,
			digest, appID, nowMs, expiresAtMs)
		return err
	})
}

// OpenTokenApp implements edge.AccessStore.
func (s *Store) OpenTokenApp(ctx context.Context, digest []byte, nowMs int64) (edge.OpenApp, error) {
	row := s.reader.QueryRowContext(ctx, `SELECT a.id, a.name, a.scopes, a.client_id, a.created_at_ms
        FROM open_tokens t JOIN open_apps a ON a.id = t.app_id WHERE t.digest = ? AND t.expires_at_ms > ?`, digest, nowMs)
	a, err := scanOpenApp(row)
	if errors.Is(err, sql.ErrNoRows) {
		return a, errs.E(errs.Unauthorized, "Authorization", "invalid or expired token")
	}
	return a, translate(err)
}

// maxOpenIDBatch bounds one OpenNums/OpenRefs call (a page of a list).
const maxOpenIDBatch = 1000

// OpenNums implements edge.AccessStore.
func (s *Store) OpenNums(ctx context.Context, kind string, refs []string) (map[string]int64, error) {
	if len(refs) > maxOpenIDBatch {
		return nil, errs.TooLargef("ids", "at most %d ids at once", maxOpenIDBatch)
	}
	out := make(map[string]int64, len(refs))
	missing := false
	for _, r := range refs {
		var n int64
		err := s.reader.QueryRowContext(ctx, `SELECT num FROM open_ids WHERE kind = ? AND ref = ?`, kind, r).Scan(&n)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			missing = true
		case err != nil:
			return nil, translate(err)
		default:
			out[r] = n
		}
	}
	if !missing {
		return out, nil
	}
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		for _, r := range refs {
			if _, ok := out[r]; ok {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO open_ids (kind, ref) VALUES (?, ?)`, kind, r); err != nil {
				return err
			}
			var n int64
			if err := tx.QueryRowContext(ctx, `SELECT num FROM open_ids WHERE kind = ? AND ref = ?`, kind, r).Scan(&n); err != nil {
				return err
			}
			out[r] = n
		}
		return nil
	})
	return out, err
}

// OpenRefs implements edge.AccessStore.
func (s *Store) OpenRefs(ctx context.Context, kind string, nums []int64) (map[int64]string, error) {
	if len(nums) > maxOpenIDBatch {
		return nil, errs.TooLargef("ids", "at most %d ids at once", maxOpenIDBatch)
	}
	out := make(map[int64]string, len(nums))
	for _, n := range nums {
		var r string
		err := s.reader.QueryRowContext(ctx, `SELECT ref FROM open_ids WHERE kind = ? AND num = ?`, kind, n).Scan(&r)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, translate(err)
		}
		out[n] = r
	}
	return out, nil
}

// OpenReadEnvs implements edge.AccessStore: the read and its audit line
// are one transaction, so no value leaves unaudited.
func (s *Store) OpenReadEnvs(ctx context.Context, app string, match func(env.Entry) bool) ([]env.Entry, error) {
	var out []env.Entry
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		all, err := s.readEnvs(ctx, tx, "", s.mustCipher)
		if err != nil {
			return err
		}
		out = out[:0]
		ids := make([]string, 0, len(all))
		for _, e := range all {
			if match(e) {
				out = append(out, e)
				ids = append(ids, e.ID)
			}
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: s.clock.Now().UnixMilli(), Action: AuditOpenEnvRead,
			Target: strconv.Itoa(len(out)) + " entries", Actor: "app " + app, Detail: strings.Join(ids, ",")})
	})
	return out, err
}

// CreateAPIToken implements edge.AccessStore.
func (s *Store) CreateAPIToken(ctx context.Context, t edge.APIToken, digest []byte) (edge.APIToken, error) {
	sc, err := json.Marshal(t.Scopes)
	if err != nil {
		return t, err
	}
	if t.ID == "" {
		t.ID = newID()
	}
	t.CreatedAtMs = s.clock.Now().UnixMilli()
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_tokens WHERE revoked_at_ms = 0`).Scan(&n); err != nil {
			return err
		}
		if n >= edge.MaxAPITokens {
			return errs.TooLargef("tokens", "at most %d live API tokens; revoke one first", edge.MaxAPITokens)
		}
		// Revoked tokens beyond the bound are forgotten, oldest first.
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_tokens WHERE id IN (SELECT id FROM api_tokens
            WHERE revoked_at_ms <> 0 ORDER BY revoked_at_ms DESC LIMIT -1 OFFSET ?)`, edge.MaxAPITokens-1); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_tokens (id, name, digest, scopes, created_at_ms, expires_at_ms)
            VALUES (?, ?, ?, ?, ?, ?)`, t.ID, t.Name, digest, string(sc), t.CreatedAtMs, t.ExpiresAtMs)
		return err
	})
	return t, err
}

const apiTokenColumns = `id, name, scopes, created_at_ms, expires_at_ms, revoked_at_ms`

func scanAPIToken(sc scanner) (edge.APIToken, error) {
	var t edge.APIToken
	var scopes string
	if err := sc.Scan(&t.ID, &t.Name, &scopes, &t.CreatedAtMs, &t.ExpiresAtMs, &t.RevokedAtMs); err != nil {
		return t, err
	}
	var names []string
	if err := json.Unmarshal([]byte(scopes), &names); err != nil {
		return t, errs.E(errs.Internal, "", "token %s: scopes: %v", t.ID, err)
	}
	for _, n := range names {
		t.Scopes = append(t.Scopes, access.Scope(n))
	}
	return t, nil
}

// ListAPITokens implements edge.AccessStore: live and revoked, newest first.
func (s *Store) ListAPITokens(ctx context.Context) ([]edge.APIToken, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+apiTokenColumns+` FROM api_tokens
        ORDER BY created_at_ms DESC, id DESC LIMIT ?`, 2*edge.MaxAPITokens)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []edge.APIToken{}
	for rows.Next() {
		t, err := scanAPIToken(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, t)
	}
	return out, translate(rows.Err())
}

// RevokeAPIToken implements edge.AccessStore.
func (s *Store) RevokeAPIToken(ctx context.Context, id string, nowMs int64) error {
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at_ms = ? WHERE id = ? AND revoked_at_ms = 0`, nowMs, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("no live API token %.64q", id)
		}
		return nil
	})
}

// APITokenByDigest implements edge.AccessStore.
func (s *Store) APITokenByDigest(ctx context.Context, digest []byte) (edge.APIToken, error) {
	t, err := scanAPIToken(s.reader.QueryRowContext(ctx, `SELECT `+apiTokenColumns+` FROM api_tokens WHERE digest = ?`, digest))
	if errors.Is(err, sql.ErrNoRows) {
		return t, errs.E(errs.Unauthorized, "Authorization", "invalid token")
	}
	return t, translate(err)
}
