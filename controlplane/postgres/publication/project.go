package publication

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

// Project statuses.
const (
	ProjectActive   = "active"
	ProjectArchived = "archived"
)

const projectColumns = `project_id::text, name, status, version, created_at_ms, updated_at_ms, coalesce(archived_at_ms, 0)`

func scanProject(row pgx.Row) (controlplane.Project, error) {
	var p controlplane.Project
	err := row.Scan(&p.ID, &p.Name, &p.Status, &p.Version, &p.CreatedAtMs, &p.UpdatedAtMs, &p.ArchivedAtMs)
	return p, err
}

// PublishProject creates an active project. Names are unique.
func (p *Publisher) PublishProject(ctx context.Context, in controlplane.ProjectInput) (controlplane.Project, error) {
	if err := checkPubName("name", &in.Name); err != nil {
		return controlplane.Project{}, err
	}
	req := struct {
		Name string `json:"name"`
	}{in.Name}
	return publish(ctx, p, in.MutationID, mutationProjectCreate, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Project, error) {
		id, err := controlplane.NewID()
		if err != nil {
			return controlplane.Project{}, err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.projects WHERE name = $1)`, in.Name).Scan(&exists); err != nil {
			return controlplane.Project{}, err
		}
		if exists {
			return controlplane.Project{}, errs.E(errs.Conflict, "name", "a project named %q already exists", in.Name)
		}
		return scanProject(tx.QueryRow(ctx, `INSERT INTO ql3.projects
			(project_id, name, status, created_at_ms, updated_at_ms)
			VALUES ($1, $2, 'active', `+dbNowMs+`, `+dbNowMs+`)
			RETURNING `+projectColumns, id, in.Name))
	})
}

// ArchiveProject archives a project: it stays readable, nothing of it is
// scheduled any more, and the claims on its schedules are invalidated so an
// admission already under way cannot commit. Archiving an archived project
// is a no-op that returns it.
func (p *Publisher) ArchiveProject(ctx context.Context, in controlplane.ArchiveProjectInput) (controlplane.Project, error) {
	id, err := parsePubID("projectId", in.ProjectID)
	if err != nil {
		return controlplane.Project{}, err
	}
	if in.ExpectedVersion < 0 {
		return controlplane.Project{}, errs.Invalidf("expectedVersion", "must not be negative")
	}
	req := struct {
		ProjectID       string `json:"projectId"`
		ExpectedVersion int64  `json:"expectedVersion"`
	}{id.String(), in.ExpectedVersion}
	return publish(ctx, p, in.MutationID, mutationProjectArchive, req, func(ctx context.Context, tx pgx.Tx) (controlplane.Project, error) {
		cur, err := scanProject(tx.QueryRow(ctx, `SELECT `+projectColumns+` FROM ql3.projects WHERE project_id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return controlplane.Project{}, errs.NotFoundf("no project %s", id)
		}
		if err != nil {
			return controlplane.Project{}, err
		}
		if in.ExpectedVersion != 0 && cur.Version != in.ExpectedVersion {
			return controlplane.Project{}, errs.E(errs.Conflict, "expectedVersion", "project %s is at version %d, not %d", id, cur.Version, in.ExpectedVersion)
		}
		if cur.Status == ProjectArchived {
			return cur, nil
		}
		archived, err := scanProject(tx.QueryRow(ctx, `UPDATE ql3.projects SET status = 'archived', version = version + 1,
			archived_at_ms = `+dbNowMs+`, updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`)
			WHERE project_id = $1 RETURNING `+projectColumns, id))
		if err != nil {
			return controlplane.Project{}, err
		}
		// After the status change, so the reset marks the schedules inactive.
		if _, err := tx.Exec(ctx, resetClaimsSQL+` WHERE project_id = $1`, id); err != nil {
			return controlplane.Project{}, err
		}
		return archived, nil
	})
}

// GetProject returns a project by id or by name.
func (p *Publisher) GetProject(ctx context.Context, ref string) (controlplane.Project, error) {
	var row pgx.Row
	if id, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		row = p.db.QueryRow(ctx, `SELECT `+projectColumns+` FROM ql3.projects WHERE project_id = $1 OR name = $2`, id, ref)
	} else {
		row = p.db.QueryRow(ctx, `SELECT `+projectColumns+` FROM ql3.projects WHERE name = $1`, ref)
	}
	pr, err := scanProject(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Project{}, errs.NotFoundf("no project with id or name %.130q", ref)
	}
	if err != nil {
		return controlplane.Project{}, pubReadErr(err)
	}
	return pr, nil
}

// ListProjects returns projects in id (creation) order after the cursor id.
func (p *Publisher) ListProjects(ctx context.Context, page controlplane.ListRequest) (controlplane.ListPage[controlplane.Project], error) {
	limit, after, err := normalizeList(page)
	if err != nil {
		return controlplane.ListPage[controlplane.Project]{}, err
	}
	rows, err := p.db.Query(ctx, `SELECT `+projectColumns+` FROM ql3.projects
		WHERE ($1::uuid IS NULL OR project_id > $1::uuid) ORDER BY project_id LIMIT $2`, after, limit+1)
	if err != nil {
		return controlplane.ListPage[controlplane.Project]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Project, error) { return scanProject(r) })
	if err != nil {
		return controlplane.ListPage[controlplane.Project]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, func(x controlplane.Project) string { return x.ID }), nil
}
