package dispatch_test

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
)

// TestTokenCheckFitsItsIndex: every pull's token check (migration 0010) is
// served by run_leases_token_idx without a sort (from
// TestClaimAndDiscoveryIndexesFit in postgres).
func TestTokenCheckFitsItsIndex(t *testing.T) {
	t.Parallel()
	conn := pgtest.NewDB(t).Conn(t)
	pgfixture.CheckIndexFits(t, conn, strings.NewReplacer("$1::uuid", "'01a22f67-f4e6-72d1-ab92-9729495a5fc1'::uuid", "$2::text", "'o'::text",
		"$3::bytea", "'\\x00'::bytea").Replace(dispatch.SQLTokenReused), "run_leases_token_idx")
}
