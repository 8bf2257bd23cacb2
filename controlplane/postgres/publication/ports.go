package publication

import "github.com/ql3/ql3/controlplane"

// The ports the Publisher implements on the admin role.
var (
	_ controlplane.Publication    = (*Publisher)(nil)
	_ controlplane.RunReads       = (*Publisher)(nil)
	_ controlplane.Workers        = (*Publisher)(nil)
	_ controlplane.Authentication = (*Publisher)(nil)
	_ controlplane.AuditLog       = (*Publisher)(nil)
)
