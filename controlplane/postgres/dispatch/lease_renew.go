package dispatch

import (
	"context"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/renewal"
	"github.com/ql3/ql3/core/protocol"
)

// RenewForHeartbeat implements controlplane.LeasePort (postgres/renewal,
// ADR 0012).
func (d *Dispatcher) RenewForHeartbeat(ctx context.Context, p controlplane.Principal, sessionID string, generation int64,
	attemptIDs []string) ([]protocol.LeaseControl, error) {
	return renewal.Renew(ctx, d.db, d.opts.Lease.StartedMs, d.opts.Lease.CancelGraceMs, p, sessionID, generation, attemptIDs)
}
