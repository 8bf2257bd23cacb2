package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
)

const depColumns = `id, kind, name, version, task_id, last_action, last_run_id, created_at_ms, updated_at_ms`

func scanDep(sc scanner) (edge.Dependency, error) {
	var d edge.Dependency
	err := sc.Scan(&d.ID, &d.Kind, &d.Name, &d.Version, &d.TaskID, &d.LastAction, &d.LastRunID, &d.CreatedAtMs, &d.UpdatedAtMs)
	return d, err
}

// CreateDependency implements edge.SubscriptionStore. The same kind and
// name twice is a conflict (one package, one record).
func (s *Store) CreateDependency(ctx context.Context, in edge.NewDependency, actor string) (edge.Dependency, error) {
	v, err := edge.CheckDependency(in)
	if err != nil {
		return edge.Dependency{}, err
	}
	now := s.clock.Now().UnixMilli()
	id := newID()
	err = s.write(ctx, func(tx *wtx, _ *signals) error {
		return createDependencyTx(ctx, tx, id, v, now, actor)
	})
	if err != nil {
		return edge.Dependency{}, err
	}
	return s.GetDependency(ctx, id)
}

// createDependencyTx writes a checked dependency record and its audit
// line inside tx (CreateDependency; the QingLong import, ADR 0056).
func createDependencyTx(ctx context.Context, tx *wtx, id string, v edge.NewDependency, now int64, actor string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM dependencies`).Scan(&n); err != nil {
		return err
	}
	if n >= edge.MaxDependencies {
		return errs.TooLargef("dependencies", "at most %d dependencies", edge.MaxDependencies)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO dependencies (id, kind, name, version, created_at_ms, updated_at_ms)
            VALUES (?, ?, ?, ?, ?, ?)`, id, v.Kind, v.Name, v.Version, now, now); err != nil {
		if errs.Code(translate(err)) == errs.Conflict {
			return errs.E(errs.Conflict, "name", "%s package %q is already listed", v.Kind, v.Name)
		}
		return err
	}
	return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditDepCreate, Target: id, Actor: actor,
		Detail: v.Kind + " " + v.Name + " " + v.Version})
}

// DeleteDependency implements edge.SubscriptionStore: the record goes (its
// system task's history stays); uninstalling is the remove action.
func (s *Store) DeleteDependency(ctx context.Context, id, actor string) error {
	now := s.clock.Now().UnixMilli()
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		d, err := getDep(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM dependencies WHERE id = ?`, id); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditDepDelete, Target: id, Actor: actor, Detail: d.Kind + " " + d.Name})
	})
}

func getDep(ctx context.Context, q queryer, id string) (edge.Dependency, error) {
	d, err := scanDep(q.QueryRowContext(ctx, `SELECT `+depColumns+` FROM dependencies WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, errs.NotFoundf("dependency %s not found", id)
	}
	return d, translate(err)
}

// GetDependency implements edge.SubscriptionStore.
func (s *Store) GetDependency(ctx context.Context, id string) (edge.Dependency, error) {
	return getDep(ctx, s.reader, id)
}

// ListDependencies implements edge.SubscriptionStore: by kind and name,
// one kind when kind is not "", bounded by edge.MaxDependencies.
func (s *Store) ListDependencies(ctx context.Context, kind string) ([]edge.Dependency, error) {
	if kind != "" {
		if _, err := edge.CheckDependency(edge.NewDependency{Kind: kind, Name: "x"}); err != nil {
			return nil, err
		}
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+depColumns+` FROM dependencies WHERE ? = '' OR kind = ?
ORDER BY kind, name LIMIT ?`, kind, kind, edge.MaxDependencies)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []edge.Dependency{}
	for rows.Next() {
		d, err := scanDep(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

// RecordDependencyAction implements edge.SubscriptionStore.
func (s *Store) RecordDependencyAction(ctx context.Context, id, taskID, action, runID, actor string) (edge.Dependency, error) {
	switch action {
	case edge.DepInstall, edge.DepReinstall, edge.DepRemove:
	default:
		return edge.Dependency{}, errs.Invalidf("action", "must be install, reinstall or remove, got %.32q", action)
	}
	now := s.clock.Now().UnixMilli()
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		d, err := getDep(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE dependencies SET task_id = ?, last_action = ?, last_run_id = ?, updated_at_ms = ?
            WHERE id = ?`, taskID, action, runID, now, id); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditDepAction, Target: id, Actor: actor,
			Detail: action + " " + d.Kind + " " + d.Name + " run=" + runID})
	})
	if err != nil {
		return edge.Dependency{}, err
	}
	return s.GetDependency(ctx, id)
}

// GetDependencySettings implements edge.SubscriptionStore (empty settings
// for a kind never set).
func (s *Store) GetDependencySettings(ctx context.Context, kind string) (edge.DependencySettings, error) {
	out := edge.DependencySettings{Kind: kind}
	if _, err := edge.CheckDependencySettings(out); err != nil {
		return out, err
	}
	err := s.reader.QueryRowContext(ctx, `SELECT registry, proxy FROM dependency_settings WHERE kind = ?`, kind).Scan(&out.Registry, &out.Proxy)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	return out, translate(err)
}

// SetDependencySettings implements edge.SubscriptionStore.
func (s *Store) SetDependencySettings(ctx context.Context, in edge.DependencySettings, actor string) (edge.DependencySettings, error) {
	v, err := edge.CheckDependencySettings(in)
	if err != nil {
		return v, err
	}
	now := s.clock.Now().UnixMilli()
	err = s.write(ctx, func(tx *wtx, _ *signals) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO dependency_settings (kind, registry, proxy, updated_at_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (kind) DO UPDATE SET registry = excluded.registry, proxy = excluded.proxy, updated_at_ms = excluded.updated_at_ms`,
			v.Kind, v.Registry, v.Proxy, now); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditDepSettings, Target: v.Kind, Actor: actor,
			Detail: "registry=" + v.Registry + " proxy=" + v.Proxy})
	})
	return v, err
}
