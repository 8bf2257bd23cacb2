package publication

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/find"
)

// FindTasks is ListTasks with a search (ADR 0057): live tasks of the
// project ("" for every project) whose search text (name, command,
// labels; core/find) holds q, in the list's order (task id), keyset-paged.
// q is checked and folded by find.CheckSearch; "" lists every task.
func (p *Publisher) FindTasks(ctx context.Context, projectID, q string, page controlplane.ListRequest) (controlplane.ListPage[controlplane.Task], error) {
	q, err := find.CheckSearch("q", q)
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, err
	}
	if q == "" {
		return p.ListTasks(ctx, projectID, page)
	}
	limit, after, err := normalizeList(page)
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, err
	}
	var proj *uuid.UUID
	if projectID != "" {
		id, err := parsePubID("project", projectID)
		if err != nil {
			return controlplane.ListPage[controlplane.Task]{}, err
		}
		proj = &id
	}
	rows, err := p.db.Query(ctx, taskSelect+`
		WHERE ($1::uuid IS NULL OR t.project_id = $1::uuid) AND ($2::uuid IS NULL OR t.task_id > $2::uuid)
		  AND t.deleted_at_ms IS NULL AND strpos(t.search_text, $4::text) > 0
		ORDER BY t.task_id LIMIT $3`, proj, after, limit+1, q)
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Task, error) { return scanTask(r) })
	if err != nil {
		return controlplane.ListPage[controlplane.Task]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, func(x controlplane.Task) string { return x.ID }), nil
}
