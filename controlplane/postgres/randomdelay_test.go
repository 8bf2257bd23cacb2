package postgres_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/scriptpath"
)

// TestRandomDelayMsSQLMatchesCore: the SQL the cluster's admission uses
// gives the delay core/scriptpath.RandomDelayMs gives, for keys whose
// hash has the top bit set or not, and for small and large maxima.
func TestRandomDelayMsSQLMatchesCore(t *testing.T) {
	t.Parallel()
	conn := pgtest.NewDB(t).Conn(t)
	for _, key := range []string{"", "a", "trigger:123:2026-12-01T00:00:00Z", "中文", "k1", "k2", "k3", "k4", "k5", "k6"} {
		for _, max := range []int64{0, 1, 7, 1000, 59_999, scriptpath.MaxRandomDelayMs} {
			var got int64
			if err := conn.QueryRow(context.Background(), "SELECT "+postgres.RandomDelayMsSQL("$1::text", "$2::bigint"), key, max).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := scriptpath.RandomDelayMs(key, max); got != want {
				t.Errorf("key %q max %d: SQL %d, core %d", key, max, got, want)
			}
		}
	}
}
