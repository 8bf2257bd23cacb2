// Package openapps stores QingLong's Open API apps, their tokens and the
// numeric ids of tasks and env entries on PostgreSQL, as the admin role
// (ADR 0057, migration 0016). Secrets and tokens are stored as their
// SHA-256 only.
package openapps

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
)

// Audit actions.
const (
	AuditAppCreate = "open.app_create"
	AuditAppDelete = "open.app_delete"
)

// DB is what Store needs: *pgxpool.Pool satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store implements controlplane.OpenApps on an admin pool.
type Store struct{ db DB }

var _ controlplane.OpenApps = (*Store)(nil)

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

const appColumns = `app_id::text, project_id::text, name, client_id, scopes, created_at_ms`

func scanApp(row pgx.Row, extra ...any) (controlplane.OpenApp, error) {
	var a controlplane.OpenApp
	err := row.Scan(append([]any{&a.ID, &a.ProjectID, &a.Name, &a.ClientID, &a.Scopes, &a.CreatedAtMs}, extra...)...)
	return a, err
}

func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.UUID{}, errs.Invalidf(field, "must be a UUID")
	}
	return id, nil
}

// CreateOpenApp implements controlplane.OpenApps.
func (s *Store) CreateOpenApp(ctx context.Context, in controlplane.OpenAppInput) (controlplane.OpenApp, string, error) {
	name, err := qlopen.CheckAppName("name", in.Name)
	if err != nil {
		return controlplane.OpenApp{}, "", err
	}
	scopes, err := access.ParseAppScopes("scopes", in.Scopes)
	if err != nil {
		return controlplane.OpenApp{}, "", err
	}
	project, err := parseID("projectId", in.ProjectID)
	if err != nil {
		return controlplane.OpenApp{}, "", err
	}
	clientID, secret, err := qlopen.NewClient()
	if err != nil {
		return controlplane.OpenApp{}, "", err
	}
	appID, err := controlplane.NewID()
	if err != nil {
		return controlplane.OpenApp{}, "", err
	}
	digest := sha256.Sum256([]byte(secret))
	var out controlplane.OpenApp
	err = tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var n int
		var exists, live bool
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE name = $2) > 0,
			(SELECT status = 'active' FROM ql3.projects WHERE project_id = $1) IS TRUE
			FROM ql3.open_apps WHERE project_id = $1`, project, name).Scan(&n, &exists, &live); err != nil {
			return err
		}
		switch {
		case !live:
			return errs.NotFoundf("no active project %s", project)
		case exists:
			return errs.E(errs.Conflict, "name", "an app named %.64q exists in this project", name)
		case n >= controlplane.MaxOpenApps:
			return errs.TooLargef("apps", "at most %d Open API apps per project", controlplane.MaxOpenApps)
		}
		var err error
		out, err = scanApp(tx.QueryRow(ctx, `INSERT INTO ql3.open_apps (app_id, project_id, name, client_id, secret_digest, scopes, created_at_ms)
			VALUES ($1, $2, $3, $4, $5, $6, `+postgres.DBNowMs+`) RETURNING `+appColumns, appID, project, name, clientID, digest[:], scopes))
		if err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, AuditAppCreate, "open_app", out.ID, map[string]any{"name": name, "projectId": out.ProjectID, "scopes": scopes})
	})
	if err != nil {
		return controlplane.OpenApp{}, "", err
	}
	return out, secret, nil
}

// ListOpenApps implements controlplane.OpenApps: a project's apps ("" for
// every project's), oldest first.
func (s *Store) ListOpenApps(ctx context.Context, projectID string) ([]controlplane.OpenApp, error) {
	var project any
	if projectID != "" {
		id, err := parseID("project", projectID)
		if err != nil {
			return nil, err
		}
		project = id
	}
	rows, err := s.db.Query(ctx, `SELECT `+appColumns+` FROM ql3.open_apps
		WHERE $1::uuid IS NULL OR project_id = $1::uuid ORDER BY created_at_ms, app_id LIMIT 10000`, project)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.OpenApp, error) { return scanApp(r) })
	return out, postgres.Translate(err)
}

// DeleteOpenApp implements controlplane.OpenApps; its tokens go with it.
func (s *Store) DeleteOpenApp(ctx context.Context, id string) error {
	appID, err := parseID("app", id)
	if err != nil {
		return err
	}
	return tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `DELETE FROM ql3.open_apps WHERE app_id = $1 RETURNING name`, appID).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no app %s", appID)
		}
		if err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, AuditAppDelete, "open_app", appID.String(), map[string]any{"name": name})
	})
}

// OpenAppByClient implements controlplane.OpenApps.
func (s *Store) OpenAppByClient(ctx context.Context, clientID string) (controlplane.OpenApp, []byte, error) {
	var digest []byte
	a, err := scanApp(s.db.QueryRow(ctx, `SELECT `+appColumns+`, secret_digest FROM ql3.open_apps WHERE client_id = $1`, clientID), &digest)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, nil, errs.NotFoundf("no app with this client_id")
	}
	return a, digest, postgres.Translate(err)
}

// IssueOpenToken implements controlplane.OpenApps.
func (s *Store) IssueOpenToken(ctx context.Context, appID string, digest []byte, nowMs, expiresAtMs int64) error {
	id, err := parseID("app", appID)
	if err != nil {
		return err
	}
	return tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM ql3.open_tokens WHERE app_id = $1 AND (expires_at_ms <= $2 OR token_digest IN (
			SELECT token_digest FROM ql3.open_tokens WHERE app_id = $1 ORDER BY seq DESC OFFSET $3))`,
			id, nowMs, controlplane.MaxOpenTokensPerApp-1); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ql3.open_tokens (token_digest, app_id, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4)`,
			digest, id, nowMs, expiresAtMs)
		return err
	})
}

// OpenTokenApp implements controlplane.OpenApps.
func (s *Store) OpenTokenApp(ctx context.Context, digest []byte, nowMs int64) (controlplane.OpenApp, error) {
	a, err := scanApp(s.db.QueryRow(ctx, `SELECT a.app_id::text, a.project_id::text, a.name, a.client_id, a.scopes, a.created_at_ms
		FROM ql3.open_tokens t JOIN ql3.open_apps a USING (app_id)
		WHERE t.token_digest = $1 AND t.expires_at_ms > $2`, digest, nowMs))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, errs.E(errs.Unauthorized, "Authorization", "token expired or invalid")
	}
	return a, postgres.Translate(err)
}

// OpenNums implements controlplane.OpenApps.
func (s *Store) OpenNums(ctx context.Context, projectID, kind string, refs []string) (map[string]int64, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	// New numbers first (a conflict keeps the old one), then one read.
	if _, err := s.db.Exec(ctx, `INSERT INTO ql3.open_ids (project_id, kind, ref)
		SELECT $1, $2, r FROM unnest($3::text[]) AS r ORDER BY r ON CONFLICT DO NOTHING`, project, kind, refs); err != nil {
		return nil, postgres.Translate(err)
	}
	rows, err := s.db.Query(ctx, `SELECT ref, num FROM ql3.open_ids WHERE project_id = $1 AND kind = $2 AND ref = ANY($3::text[])`, project, kind, refs)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref string
		var n int64
		if err := rows.Scan(&ref, &n); err != nil {
			return nil, postgres.Translate(err)
		}
		out[ref] = n
	}
	return out, postgres.Translate(rows.Err())
}

// OpenRefs implements controlplane.OpenApps.
func (s *Store) OpenRefs(ctx context.Context, projectID, kind string, nums []int64) (map[int64]string, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT num, ref FROM ql3.open_ids WHERE project_id = $1 AND kind = $2 AND num = ANY($3::bigint[])`, project, kind, nums)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer rows.Close()
	out := make(map[int64]string, len(nums))
	for rows.Next() {
		var n int64
		var ref string
		if err := rows.Scan(&n, &ref); err != nil {
			return nil, postgres.Translate(err)
		}
		out[n] = ref
	}
	return out, postgres.Translate(rows.Err())
}
