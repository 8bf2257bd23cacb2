package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
)

func TestFailoverRisk(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    postgres.Replication
		want string // substring of the risk; "" = none
	}{
		{"no standby, nothing to promote", postgres.Replication{SynchronousCommit: "off"}, ""},
		{"asynchronous standby", postgres.Replication{Standbys: 1, SynchronousCommit: "on"}, "1 streaming standby(s) and synchronous_standby_names is empty"},
		{"blank names are empty", postgres.Replication{Standbys: 2, SynchronousStandbyNames: "  ", SynchronousCommit: "on"}, "2 streaming standby(s)"},
		{"synchronous, commit on", postgres.Replication{Standbys: 1, SynchronousStandbyNames: "*", SynchronousCommit: "on"}, ""},
		{"synchronous, remote_apply", postgres.Replication{Standbys: 1, SynchronousStandbyNames: "ANY 1 (a, b)", SynchronousCommit: "remote_apply"}, ""},
		{"synchronous, remote_write", postgres.Replication{Standbys: 1, SynchronousStandbyNames: "a", SynchronousCommit: "remote_write"}, ""},
		{"synchronous names, commit local", postgres.Replication{Standbys: 1, SynchronousStandbyNames: "*", SynchronousCommit: "local"}, "synchronous_commit = local"},
		{"synchronous names, commit off", postgres.Replication{Standbys: 1, SynchronousStandbyNames: "*", SynchronousCommit: "off"}, "synchronous_commit = off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.FailoverRisk()
			if tc.want == "" && got != "" || tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, "ADR 0033")) {
				t.Fatalf("FailoverRisk() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadReplicationAsAdmin: the admin role (no pg_read_all_stats) reads
// the settings, and a server without standbys reports none. The standby
// cases run in controlplane/app (standbys need Debian's pg_basebackup;
// this package also runs on the embedded PostgreSQL 18).
func TestReadReplicationAsAdmin(t *testing.T) {
	t.Parallel()
	r, err := postgres.ReadReplication(context.Background(), pgtest.NewDB(t).Pool(t, postgres.RoleAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if r.Standbys != 0 || r.SynchronousCommit == "" || r.FailoverRisk() != "" {
		t.Fatalf("ReadReplication = %+v (risk %q), want no standby and a synchronous_commit", r, r.FailoverRisk())
	}
}
