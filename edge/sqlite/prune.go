package sqlite

import (
	"context"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
)

// PruneRuns implements edge.RunStore.
func (s *Store) PruneRuns(ctx context.Context, finishedBeforeMs int64, limit int) (int, error) {
	if limit < 1 || limit > edge.MaxPruneBatch {
		return 0, errs.Invalidf("limit", "must be 1..%d, got %d", edge.MaxPruneBatch, limit)
	}
	if finishedBeforeMs <= 0 {
		return 0, errs.Invalidf("finishedBeforeMs", "must be positive, got %d", finishedBeforeMs)
	}
	var deleted int
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM runs WHERE finished_at_ms > 0 AND finished_at_ms < ?
            AND status IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')
            ORDER BY finished_at_ms LIMIT ?`, finishedBeforeMs, limit)
		if err != nil {
			return err
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		for _, q := range []string{
			`DELETE FROM run_events WHERE run_id IN ` + in,
			`DELETE FROM attempts WHERE run_id IN ` + in,
			// A re-run outlives the run it repeated; its event payload
			// still names it.
			`UPDATE runs SET rerun_of = NULL WHERE rerun_of IN ` + in,
			`DELETE FROM runs WHERE id IN ` + in,
		} {
			if _, err := tx.ExecContext(ctx, q, ids...); err != nil {
				return err
			}
		}
		deleted = len(ids)
		return nil
	})
	return deleted, err
}
