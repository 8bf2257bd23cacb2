// Package depstore stores the cluster's dependencies on PostgreSQL as the
// admin role (ADR 0062, migration 0020): the dependency records, a
// project's registry and proxy per kind, and what each worker has
// installed. The end of an install's Run is recorded by a trigger in the
// transaction that ends the Run (dependency_run_finished); this package
// records its start.
package depstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

// Audit actions.
const (
	AuditCreate   = "dependency.create"
	AuditDelete   = "dependency.delete"
	AuditAction   = "dependency.action"
	AuditSettings = "dependency.settings"
)

// DB is what Store needs: *pgxpool.Pool satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store implements controlplane.Dependencies on an admin pool.
type Store struct{ db DB }

var _ controlplane.Dependencies = (*Store)(nil)

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

func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || id.String() != s {
		return uuid.UUID{}, errs.Invalidf(field, "must be a UUID")
	}
	return id, nil
}

const depColumns = `dependency_id::text, project_id::text, kind, name, version, labels, status, coalesce(last_action, ''), created_at_ms, updated_at_ms`

func scanDep(row pgx.Row) (controlplane.Dependency, error) {
	var d controlplane.Dependency
	var labels []byte
	err := row.Scan(&d.ID, &d.ProjectID, &d.Kind, &d.Name, &d.Version, &labels, &d.Status, &d.LastAction, &d.CreatedAtMs, &d.UpdatedAtMs)
	if err == nil {
		err = json.Unmarshal(labels, &d.Labels)
	}
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	return d, err
}

// CheckLabels validates a dependency's placement labels: placement's
// label rules, at most MaxDependencyLabels.
func CheckLabels(labels map[string]string) (map[string]string, error) {
	if len(labels) > controlplane.MaxDependencyLabels {
		return nil, errs.TooLargef("labels", "has %d entries, limit is %d", len(labels), controlplane.MaxDependencyLabels)
	}
	if err := (placement.Requirements{Required: placement.Required{Labels: labels}}).Validate(); err != nil {
		return nil, errs.Prefix("labels", err)
	}
	if labels == nil {
		labels = map[string]string{}
	}
	return labels, nil
}

// CreateDependency implements controlplane.Dependencies.
func (s *Store) CreateDependency(ctx context.Context, in controlplane.DependencyInput) (controlplane.Dependency, error) {
	var out controlplane.Dependency
	err := tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = CreateDependencyTx(ctx, tx, in)
		return err
	})
	return out, err
}

// CreateDependencyTx is CreateDependency inside the caller's transaction
// (the cluster's QingLong import, ADR 0063): the same checks, record and
// audit line; no install starts.
func CreateDependencyTx(ctx context.Context, tx pgx.Tx, in controlplane.DependencyInput) (controlplane.Dependency, error) {
	d, err := depcmd.Check(depcmd.Dependency{Kind: in.Kind, Name: in.Name, Version: in.Version})
	if err != nil {
		return controlplane.Dependency{}, err
	}
	labels, err := CheckLabels(in.Labels)
	if err != nil {
		return controlplane.Dependency{}, err
	}
	project, err := parseID("projectId", in.ProjectID)
	if err != nil {
		return controlplane.Dependency{}, err
	}
	id, err := controlplane.NewID()
	if err != nil {
		return controlplane.Dependency{}, err
	}
	lj, _ := json.Marshal(labels)
	var n int
	var exists, live bool
	if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE kind = $2 AND name = $3) > 0,
		(SELECT status = 'active' FROM ql3.projects WHERE project_id = $1) IS TRUE
		FROM ql3.dependencies WHERE project_id = $1`, project, d.Kind, d.Name).Scan(&n, &exists, &live); err != nil {
		return controlplane.Dependency{}, err
	}
	switch {
	case !live:
		return controlplane.Dependency{}, errs.NotFoundf("no active project %s", project)
	case exists:
		return controlplane.Dependency{}, errs.E(errs.Conflict, "name", "the project has a %s dependency %.64q", d.Kind, d.Name)
	case n >= controlplane.MaxDependencies:
		return controlplane.Dependency{}, errs.TooLargef("dependencies", "at most %d dependencies per project", controlplane.MaxDependencies)
	}
	out, err := scanDep(tx.QueryRow(ctx, `INSERT INTO ql3.dependencies (dependency_id, project_id, kind, name, version, labels, created_at_ms, updated_at_ms)
		VALUES ($1, $2, $3, $4, $5, $6, `+postgres.DBNowMs+`, `+postgres.DBNowMs+`) RETURNING `+depColumns, id, project, d.Kind, d.Name, d.Version, lj))
	if err != nil {
		return out, err
	}
	return out, publication.InsertAudit(ctx, tx, AuditCreate, "dependency", out.ID,
		map[string]any{"projectId": out.ProjectID, "kind": d.Kind, "name": d.Name, "version": d.Version, "labels": labels})
}

// GetDependency implements controlplane.Dependencies.
func (s *Store) GetDependency(ctx context.Context, id string) (controlplane.Dependency, error) {
	depID, err := parseID("dependency", id)
	if err != nil {
		return controlplane.Dependency{}, err
	}
	d, err := scanDep(s.db.QueryRow(ctx, `SELECT `+depColumns+` FROM ql3.dependencies WHERE dependency_id = $1`, depID))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, errs.NotFoundf("no dependency %s", depID)
	}
	return d, postgres.Translate(err)
}

// ListDependencies implements controlplane.Dependencies.
func (s *Store) ListDependencies(ctx context.Context, projectID, kind string) ([]controlplane.Dependency, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return nil, err
	}
	if kind != "" {
		if _, err := depcmd.Check(depcmd.Dependency{Kind: kind, Name: "x"}); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.Query(ctx, `SELECT `+depColumns+` FROM ql3.dependencies
		WHERE project_id = $1 AND ($2 = '' OR kind = $2) ORDER BY kind, name LIMIT $3`, project, kind, controlplane.MaxDependencies)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Dependency, error) { return scanDep(r) })
	return out, postgres.Translate(err)
}

// DeleteDependency implements controlplane.Dependencies.
func (s *Store) DeleteDependency(ctx context.Context, id string) ([]string, error) {
	depID, err := parseID("dependency", id)
	if err != nil {
		return nil, err
	}
	var tasks []string
	err = tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		tasks = tasks[:0]
		rows, err := tx.Query(ctx, `SELECT task_id::text FROM ql3.dependency_installs WHERE dependency_id = $1 ORDER BY task_id`, depID)
		if err != nil {
			return err
		}
		if tasks, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		var kind, name string
		err = tx.QueryRow(ctx, `DELETE FROM ql3.dependencies WHERE dependency_id = $1 RETURNING kind, name`, depID).Scan(&kind, &name)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no dependency %s", depID)
		}
		if err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, AuditDelete, "dependency", depID.String(), map[string]any{"kind": kind, "name": name})
	})
	return tasks, err
}
