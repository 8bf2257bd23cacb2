package sqlite

import (
	"context"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
)

var _ edge.AuditAppender = (*Store)(nil)

// AppendAudit implements edge.AuditAppender: one line for a change made
// outside the database (the scripts folder), written after the change.
func (s *Store) AppendAudit(ctx context.Context, a edge.AuditEntry) error {
	if a.Action == "" || len(a.Action) > 64 {
		return errs.Invalidf("action", "must be 1..64 bytes")
	}
	if a.AtMs == 0 {
		a.AtMs = s.clock.Now().UnixMilli()
	}
	return s.write(ctx, func(tx *wtx, _ *signals) error {
		return insertAudit(ctx, tx, a)
	})
}
