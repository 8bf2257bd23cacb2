package depstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

// runKeyPrefix is how postgres/runops stores a run-now key (the Run's
// idempotency_key); migration 0020's trigger strips the same prefix.
const runKeyPrefix = "ql3:manual:v1:"

// DependencyWorkers implements controlplane.Dependencies: a worker
// matches when its live online session's labels include every label of
// the dependency.
func (s *Store) DependencyWorkers(ctx context.Context, id string) ([]controlplane.DependencyWorker, error) {
	depID, err := parseID("dependency", id)
	if err != nil {
		return nil, err
	}
	if _, err := s.GetDependency(ctx, id); err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT w.worker_id::text, w.name
		FROM ql3.dependencies d
		JOIN ql3.worker_sessions ws ON ws.status = 'online' AND ws.lease_expires_at_ms > `+postgres.DBNowMs+`
			AND coalesce(ws.capabilities->'labels', '{}') @> d.labels
			-- the control plane's own executors (ADR 0061) install nothing
			AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(coalesce(ws.capabilities->'executors', '[]')) e
				WHERE starts_with(e, '`+placement.SystemExecutorPrefix+`'))
		JOIN ql3.workers w ON w.worker_id = ws.worker_id AND w.status = 'active'
		WHERE d.dependency_id = $1 ORDER BY w.name LIMIT $2`, depID, controlplane.MaxDependencyWorkers)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.DependencyWorker, error) {
		var w controlplane.DependencyWorker
		return w, r.Scan(&w.ID, &w.Name)
	})
	return out, postgres.Translate(err)
}

// StartDependencyAction implements controlplane.Dependencies.
func (s *Store) StartDependencyAction(ctx context.Context, id, action string) (controlplane.Dependency, error) {
	depID, err := parseID("dependency", id)
	if err != nil {
		return controlplane.Dependency{}, err
	}
	if err := depcmd.CheckAction(action); err != nil {
		return controlplane.Dependency{}, err
	}
	var out controlplane.Dependency
	err = tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var worker string
		err := tx.QueryRow(ctx, `SELECT w.name FROM ql3.dependency_installs i JOIN ql3.workers w USING (worker_id)
			WHERE i.dependency_id = $1 AND i.finished_at_ms IS NULL ORDER BY w.name LIMIT 1`, depID).Scan(&worker)
		switch {
		case err == nil:
			return errs.Conflictf("the dependency's last action is still running on worker %.128s; cancel it first", worker)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		out, err = scanDep(tx.QueryRow(ctx, `UPDATE ql3.dependencies SET last_action = $2, updated_at_ms = greatest(updated_at_ms, `+postgres.DBNowMs+`)
			WHERE dependency_id = $1 RETURNING `+depColumns, depID, action))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no dependency %s", depID)
		}
		if err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, AuditAction, "dependency", out.ID,
			map[string]any{"action": action, "kind": out.Kind, "name": out.Name, "version": out.Version})
	})
	return out, err
}

const installColumns = `i.dependency_id::text, i.worker_id::text, w.name, i.task_id::text, i.action, i.version,
	coalesce(i.run_id, (SELECT r.run_id FROM ql3.runs r WHERE r.project_id = i.project_id
		AND r.idempotency_key = '` + runKeyPrefix + `' || i.run_key))::text,
	i.status, i.started_at_ms, coalesce(i.finished_at_ms, 0)`

func scanInstall(row pgx.Row) (controlplane.DependencyInstall, error) {
	var in controlplane.DependencyInstall
	var run *string
	err := row.Scan(&in.DependencyID, &in.WorkerID, &in.WorkerName, &in.TaskID, &in.Action, &in.Version, &run,
		&in.Status, &in.StartedAtMs, &in.FinishedAtMs)
	if run != nil {
		in.RunID = *run
	}
	return in, err
}

// RecordDependencyInstall implements controlplane.Dependencies.
func (s *Store) RecordDependencyInstall(ctx context.Context, in controlplane.DependencyInstallInput) (controlplane.DependencyInstall, error) {
	depID, err := parseID("dependencyId", in.DependencyID)
	if err != nil {
		return controlplane.DependencyInstall{}, err
	}
	workerID, err := parseID("workerId", in.WorkerID)
	if err != nil {
		return controlplane.DependencyInstall{}, err
	}
	taskID, err := parseID("taskId", in.TaskID)
	if err != nil {
		return controlplane.DependencyInstall{}, err
	}
	if err := depcmd.CheckAction(in.Action); err != nil {
		return controlplane.DependencyInstall{}, err
	}
	if !strings.HasPrefix(in.RunKey, controlplane.DependencyRunKeyPrefix) || len(in.RunKey) > 128 {
		return controlplane.DependencyInstall{}, errs.Invalidf("runKey", "must start with %q and be at most 128 bytes", controlplane.DependencyRunKeyPrefix)
	}
	status := controlplane.DepStatusInstalling
	if in.Action == depcmd.Remove {
		status = controlplane.DepStatusRemoving
	}
	var out controlplane.DependencyInstall
	err = tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var ok bool
		err := tx.QueryRow(ctx, `WITH up AS (
			INSERT INTO ql3.dependency_installs AS i (dependency_id, project_id, worker_id, task_id, action, version, run_key, status, started_at_ms)
			SELECT d.dependency_id, d.project_id, $2, $3, $4, d.version, $5, $6, `+postgres.DBNowMs+`
			FROM ql3.dependencies d WHERE d.dependency_id = $1
			ON CONFLICT (dependency_id, worker_id) DO UPDATE SET task_id = EXCLUDED.task_id, action = EXCLUDED.action,
				version = EXCLUDED.version, run_key = EXCLUDED.run_key, run_id = NULL, status = EXCLUDED.status,
				started_at_ms = EXCLUDED.started_at_ms, finished_at_ms = NULL
			WHERE i.finished_at_ms IS NOT NULL
			RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM up)`, depID, workerID, taskID, in.Action, in.RunKey, status).Scan(&ok)
		if err != nil {
			return err
		}
		if !ok {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.dependencies WHERE dependency_id = $1)`, depID).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return errs.NotFoundf("no dependency %s", depID)
			}
			return errs.Conflictf("the dependency's last action on worker %s has not ended", workerID)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	out, err = scanInstall(s.db.QueryRow(ctx, `SELECT `+installColumns+` FROM ql3.dependency_installs i JOIN ql3.workers w USING (worker_id)
		WHERE i.dependency_id = $1 AND i.worker_id = $2`, depID, workerID))
	return out, postgres.Translate(err)
}

// FailDependencyInstall implements controlplane.Dependencies.
func (s *Store) FailDependencyInstall(ctx context.Context, dependencyID, workerID, runKey string) error {
	depID, err := parseID("dependencyId", dependencyID)
	if err != nil {
		return err
	}
	wID, err := parseID("workerId", workerID)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE ql3.dependency_installs SET status = 'failed', finished_at_ms = `+postgres.DBNowMs+`
		WHERE dependency_id = $1 AND worker_id = $2 AND run_key = $3 AND finished_at_ms IS NULL`, depID, wID, runKey)
	return postgres.Translate(err)
}

// ListDependencyInstalls implements controlplane.Dependencies.
func (s *Store) ListDependencyInstalls(ctx context.Context, id string) ([]controlplane.DependencyInstall, error) {
	depID, err := parseID("dependency", id)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+installColumns+` FROM ql3.dependency_installs i JOIN ql3.workers w USING (worker_id)
		WHERE i.dependency_id = $1 ORDER BY w.name LIMIT $2`, depID, controlplane.MaxDependencyWorkers)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.DependencyInstall, error) { return scanInstall(r) })
	return out, postgres.Translate(err)
}

// ListProjectInstalls implements controlplane.Dependencies: one read for
// the dependency list instead of one per dependency.
func (s *Store) ListProjectInstalls(ctx context.Context, projectID string) (map[string][]controlplane.DependencyInstall, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+installColumns+` FROM (
			SELECT i.*, row_number() OVER (PARTITION BY i.dependency_id ORDER BY w.name) AS n
			FROM ql3.dependency_installs i JOIN ql3.workers w USING (worker_id) WHERE i.project_id = $1) i
		JOIN ql3.workers w USING (worker_id)
		WHERE i.n <= $2 ORDER BY i.dependency_id, w.name`, project, controlplane.MaxDependencyWorkers)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.DependencyInstall, error) { return scanInstall(r) })
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out := map[string][]controlplane.DependencyInstall{}
	for _, in := range list {
		out[in.DependencyID] = append(out[in.DependencyID], in)
	}
	return out, nil
}

// GetDependencySettings implements controlplane.Dependencies (empty
// settings when none were set).
func (s *Store) GetDependencySettings(ctx context.Context, projectID, kind string) (controlplane.DependencySettings, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return controlplane.DependencySettings{}, err
	}
	if _, err := depcmd.CheckSettings(depcmd.Settings{Kind: kind}); err != nil {
		return controlplane.DependencySettings{}, err
	}
	out := controlplane.DependencySettings{Kind: kind}
	err = s.db.QueryRow(ctx, `SELECT registry, proxy FROM ql3.dependency_settings WHERE project_id = $1 AND kind = $2`,
		project, kind).Scan(&out.Registry, &out.Proxy)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	return out, postgres.Translate(err)
}

// SetDependencySettings implements controlplane.Dependencies.
func (s *Store) SetDependencySettings(ctx context.Context, projectID string, in controlplane.DependencySettings) (controlplane.DependencySettings, error) {
	project, err := parseID("project", projectID)
	if err != nil {
		return controlplane.DependencySettings{}, err
	}
	if _, err := depcmd.CheckSettings(depcmd.Settings(in)); err != nil {
		return controlplane.DependencySettings{}, err
	}
	err = tx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var live bool
		if err := tx.QueryRow(ctx, `SELECT (SELECT status = 'active' FROM ql3.projects WHERE project_id = $1) IS TRUE`, project).Scan(&live); err != nil {
			return err
		}
		if !live {
			return errs.NotFoundf("no active project %s", project)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ql3.dependency_settings (project_id, kind, registry, proxy, updated_at_ms)
			VALUES ($1, $2, $3, $4, `+postgres.DBNowMs+`) ON CONFLICT (project_id, kind) DO UPDATE
			SET registry = EXCLUDED.registry, proxy = EXCLUDED.proxy, updated_at_ms = EXCLUDED.updated_at_ms`,
			project, in.Kind, in.Registry, in.Proxy); err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, AuditSettings, "project", project.String(),
			map[string]any{"kind": in.Kind, "registry": in.Registry, "proxy": in.Proxy})
	})
	return in, err
}
