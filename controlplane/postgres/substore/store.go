// Package substore keeps a project's subscriptions and the tasks they made
// in PostgreSQL (issue 24, ADR 0061), on the admin role. Definitions are
// checked with core/subdef.Check (the edge's rule); every write is one
// transaction with its audit line, as ctx's actor.
package substore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

// DB is what a Store needs: *pgxpool.Pool satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store is every project's subscriptions.
type Store struct{ db DB }

var _ controlplane.SubscriptionStore = (*Store)(nil)

// New returns a Store over an admin pool.
func New(db DB) *Store { return &Store{db: db} }

const dbNowMs = postgres.DBNowMs

const columns = `subscription_id, project_id, name, slug, kind, url, branch, credential, credential_kind, filter,
	schedule, auto_add, auto_remove, remove_mode, default_cron, proxy, time_zone, enabled, task_id, last_commit,
	last_pull_at_ms, version, created_at_ms, updated_at_ms`

func scan(row pgx.Row) (controlplane.Subscription, error) {
	var s controlplane.Subscription
	var id, project uuid.UUID
	var task *uuid.UUID
	var filter []byte
	err := row.Scan(&id, &project, &s.Name, &s.Slug, &s.Kind, &s.URL, &s.Branch, &s.Credential, &s.CredentialKind, &filter,
		&s.Schedule, &s.AutoAdd, &s.AutoRemove, &s.RemoveMode, &s.DefaultCron, &s.Proxy, &s.TimeZone, &s.Enabled, &task,
		&s.LastCommit, &s.LastPullAtMs, &s.Version, &s.CreatedAtMs, &s.UpdatedAtMs)
	if err != nil {
		return s, err
	}
	s.ID, s.ProjectID = id.String(), project.String()
	if task != nil {
		s.TaskID = task.String()
	}
	if err := json.Unmarshal(filter, &s.Filter); err != nil {
		return s, errs.E(errs.Internal, "", "subscription %s: filter: %v", s.ID, err)
	}
	return s, nil
}

func parseID(field, s string) (uuid.UUID, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, errs.Invalidf(field, "must be a UUID, got %.64q", s)
	}
	return u, nil
}

func filterJSON(f subplan.Filter) (string, error) {
	if f.Include == nil {
		f.Include = []string{}
	}
	if f.Exclude == nil {
		f.Exclude = []string{}
	}
	if f.Extensions == nil {
		f.Extensions = []string{}
	}
	b, err := json.Marshal(f)
	return string(b), err
}

// lockProject takes the project's row for share and requires it active.
func lockProject(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM ql3.projects WHERE project_id = $1 FOR SHARE`, project).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.NotFoundf("no project %s", project)
	}
	if err != nil {
		return err
	}
	if status != "active" {
		return errs.E(errs.Conflict, "project", "project %s is %s", project, status)
	}
	return nil
}

func audit(ctx context.Context, tx pgx.Tx, action string, s controlplane.Subscription, extra map[string]any) error {
	d := map[string]any{"projectId": s.ProjectID, "name": s.Name, "slug": s.Slug}
	for k, v := range extra {
		d[k] = v
	}
	return publication.InsertAudit(ctx, tx, action, "subscription", s.ID, d)
}

// nameTaken turns a unique violation into a conflict naming the field.
func nameTaken(err error, in subdef.Def) error {
	var pe *postgres.Error
	if errors.As(postgres.Translate(err), &pe) && pe.SQLState == postgres.SQLStateUniqueViolation {
		if pe.Constraint == "subscriptions_project_id_slug_key" {
			return errs.E(errs.Conflict, "slug", "the project already has a subscription in folder %q", in.Slug)
		}
		return errs.E(errs.Conflict, "name", "the project already has a subscription named %q", in.Name)
	}
	return err
}

// CreateSubscription checks and stores a subscription of the project.
func (s *Store) CreateSubscription(ctx context.Context, projectID string, in subdef.Def) (controlplane.Subscription, error) {
	var out controlplane.Subscription
	err := postgres.InTx(ctx, s.db, postgres.Serializable, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = CreateSubscriptionTx(ctx, tx, projectID, in)
		return err
	})
	return out, err
}

// CreateSubscriptionTx is CreateSubscription inside the caller's
// transaction (the QingLong import writes subscriptions with everything
// else, ADR 0063); its system task is published after the commit
// (subrun.Service.EnsureTask).
func CreateSubscriptionTx(ctx context.Context, tx pgx.Tx, projectID string, in subdef.Def) (controlplane.Subscription, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	if in, err = subdef.Check(in); err != nil {
		return controlplane.Subscription{}, err
	}
	filter, err := filterJSON(in.Filter)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	if err := lockProject(ctx, tx, project); err != nil {
		return controlplane.Subscription{}, err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM ql3.subscriptions WHERE project_id = $1`, project).Scan(&n); err != nil {
		return controlplane.Subscription{}, err
	}
	if n >= controlplane.MaxSubscriptionsPerProject {
		return controlplane.Subscription{}, errs.TooLargef("subscriptions", "the project has %d subscriptions, the limit", n)
	}
	id, err := controlplane.NewID()
	if err != nil {
		return controlplane.Subscription{}, err
	}
	out, err := scan(tx.QueryRow(ctx, `INSERT INTO ql3.subscriptions (subscription_id, project_id, name, slug, kind, url, branch,
		credential, credential_kind, filter, schedule, auto_add, auto_remove, remove_mode, default_cron, proxy, time_zone, enabled,
		created_at_ms, updated_at_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::jsonb, $11, $12, $13, $14, $15, $16, $17, $18, `+dbNowMs+`, `+dbNowMs+`)
		RETURNING `+columns,
		id, project, in.Name, in.Slug, in.Kind, in.URL, in.Branch, in.Credential, in.CredentialKind, filter, in.Schedule,
		in.AutoAdd, in.AutoRemove, in.RemoveMode, in.DefaultCron, in.Proxy, in.TimeZone, in.Enabled))
	if err != nil {
		return out, nameTaken(err, in)
	}
	return out, audit(ctx, tx, controlplane.AuditSubCreate, out, map[string]any{"kind": out.Kind})
}

// UpdateSubscription replaces a subscription's definition.
func (s *Store) UpdateSubscription(ctx context.Context, id string, expectedVersion int64, in subdef.Def) (controlplane.Subscription, error) {
	sid, err := parseID("id", id)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	if in, err = subdef.Check(in); err != nil {
		return controlplane.Subscription{}, err
	}
	filter, err := filterJSON(in.Filter)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	var out controlplane.Subscription
	err = postgres.InTx(ctx, s.db, postgres.Serializable, func(ctx context.Context, tx pgx.Tx) error {
		cur, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM ql3.subscriptions WHERE subscription_id = $1 FOR UPDATE`, sid))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no subscription %s", sid)
		}
		if err != nil {
			return err
		}
		if expectedVersion != 0 && expectedVersion != cur.Version {
			return errs.E(errs.Conflict, "version", "subscription %s is at version %d, not %d", sid, cur.Version, expectedVersion)
		}
		if err := lockProject(ctx, tx, uuid.MustParse(cur.ProjectID)); err != nil {
			return err
		}
		out, err = scan(tx.QueryRow(ctx, `UPDATE ql3.subscriptions SET name = $2, slug = $3, kind = $4, url = $5, branch = $6,
			credential = $7, credential_kind = $8, filter = $9::text::jsonb, schedule = $10, auto_add = $11, auto_remove = $12,
			remove_mode = $13, default_cron = $14, proxy = $15, time_zone = $16, enabled = $17, version = version + 1,
			updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`)
			WHERE subscription_id = $1 RETURNING `+columns,
			sid, in.Name, in.Slug, in.Kind, in.URL, in.Branch, in.Credential, in.CredentialKind, filter, in.Schedule,
			in.AutoAdd, in.AutoRemove, in.RemoveMode, in.DefaultCron, in.Proxy, in.TimeZone, in.Enabled))
		if err != nil {
			return nameTaken(err, in)
		}
		return audit(ctx, tx, controlplane.AuditSubUpdate, out, map[string]any{"version": out.Version})
	})
	return out, err
}

// DeleteSubscription removes a subscription and its task records.
func (s *Store) DeleteSubscription(ctx context.Context, id string) (controlplane.Subscription, error) {
	sid, err := parseID("id", id)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	var out controlplane.Subscription
	err = postgres.InTx(ctx, s.db, postgres.Serializable, func(ctx context.Context, tx pgx.Tx) error {
		out, err = scan(tx.QueryRow(ctx, `DELETE FROM ql3.subscriptions WHERE subscription_id = $1 RETURNING `+columns, sid))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no subscription %s", sid)
		}
		if err != nil {
			return err
		}
		return audit(ctx, tx, controlplane.AuditSubDelete, out, nil)
	})
	return out, err
}

// GetSubscription reads one subscription.
func (s *Store) GetSubscription(ctx context.Context, id string) (controlplane.Subscription, error) {
	sid, err := parseID("id", id)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	out, err := scan(s.db.QueryRow(ctx, `SELECT `+columns+` FROM ql3.subscriptions WHERE subscription_id = $1`, sid))
	if errors.Is(err, pgx.ErrNoRows) {
		return out, errs.NotFoundf("no subscription %s", sid)
	}
	return out, postgres.Translate(err)
}

// GetSubscriptionByTask finds the subscription whose system task is taskID.
func (s *Store) GetSubscriptionByTask(ctx context.Context, taskID string) (controlplane.Subscription, error) {
	tid, err := parseID("taskId", taskID)
	if err != nil {
		return controlplane.Subscription{}, err
	}
	out, err := scan(s.db.QueryRow(ctx, `SELECT `+columns+` FROM ql3.subscriptions WHERE task_id = $1`, tid))
	if errors.Is(err, pgx.ErrNoRows) {
		return out, errs.NotFoundf("task %s is no subscription's system task", tid)
	}
	return out, postgres.Translate(err)
}

// ListSubscriptions lists a project's subscriptions by name (one page:
// at most MaxSubscriptionsPerProject).
func (s *Store) ListSubscriptions(ctx context.Context, projectID string) ([]controlplane.Subscription, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+columns+` FROM ql3.subscriptions WHERE project_id = $1 ORDER BY name LIMIT $2`,
		project, controlplane.MaxSubscriptionsPerProject)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Subscription, error) { return scan(r) })
	if out == nil {
		out = []controlplane.Subscription{}
	}
	return out, postgres.Translate(err)
}

// SetSubscriptionTask records the system task of a subscription.
func (s *Store) SetSubscriptionTask(ctx context.Context, id, taskID string) error {
	sid, err := parseID("id", id)
	if err != nil {
		return err
	}
	tid, err := parseID("taskId", taskID)
	if err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `UPDATE ql3.subscriptions SET task_id = $2 WHERE subscription_id = $1`, sid, tid)
	if err != nil {
		return postgres.Translate(err)
	}
	if tag.RowsAffected() != 1 {
		return errs.NotFoundf("no subscription %s", sid)
	}
	return nil
}
