package app_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/app"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/scripts/testio"
)

// TestFailoverRiskWarnedAndExported: ql3-control serve against a primary
// with an asynchronous streaming standby warns at start and exports
// ql3_postgres_failover_at_risk 1. With synchronous_standby_names set, the
// sessions it already holds still run synchronous_commit = off (the
// harness's setting), so the risk stays; a replica started afterwards,
// whose sessions get the database's synchronous_commit = on, reports 0 and
// logs no warning (ADR 0033).
func TestFailoverRiskWarnedAndExported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := pgtest.NewCluster(t)
	db := primary.NewDB(t)
	for _, role := range []string{postgres.RoleAdmin, postgres.RoleRuntime} {
		if err := postgres.EnableLogin(ctx, db.Conn(t), role, ""); err != nil {
			t.Fatal(err)
		}
	}
	token, err := runCmd(t, map[string]string{"QL3_DSN": db.DSN("")}, "token", "create", "--name", "replication")
	if err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(token)
	primary.StartStandby(t)
	super := db.Conn(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := postgres.ReadReplication(ctx, super)
		if err != nil {
			t.Fatal(err)
		}
		if r.Standbys == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby never streamed: %+v", r)
		}
		time.Sleep(10 * time.Millisecond) // the walsender starts with the standby's walreceiver
	}

	serve := func() (*app.Main, *testio.Buffer) {
		var logs testio.Buffer
		m := &app.Main{Stdout: io.Discard, Stderr: &logs, Getenv: func(string) string { return "" }, Version: "test"}
		if err := m.ParseFlags([]string{"serve", "--admin-dsn", db.DSN(postgres.RoleAdmin),
			"--runtime-dsn", db.DSN(postgres.RoleRuntime), "--listen", "127.0.0.1:0", "--no-scheduler"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m, &logs
	}
	scrape := func(m *app.Main) string {
		code, body := scrapeMetrics(t, "http://"+m.Addr(), token)
		if code != 200 {
			t.Fatalf("scrape: %d %s", code, body)
		}
		return body
	}
	expect := func(body string, lines ...string) {
		t.Helper()
		for _, want := range lines {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("/metrics lacks %q:\n%s", want, body)
			}
		}
	}

	first, logs := serve()
	if text := logs.String(); !strings.Contains(text, "exactly once does not survive an unplanned failover") ||
		!strings.Contains(text, "synchronous_standby_names is empty") {
		t.Errorf("no failover warning at start:\n%s", text)
	}
	expect(scrape(first), "ql3_postgres_standbys 1", "ql3_postgres_failover_at_risk 1")

	if err := primary.RequireSynchronousStandby(ctx, db.Name); err != nil {
		t.Fatal(err)
	}
	expect(scrape(first), "ql3_postgres_failover_at_risk 1") // its sessions: synchronous_commit = off
	second, logs := serve()
	if text := logs.String(); strings.Contains(text, "unplanned failover") {
		t.Errorf("a warning with a synchronous standby:\n%s", text)
	}
	expect(scrape(second), "ql3_postgres_standbys 1", "ql3_postgres_failover_at_risk 0")
}
