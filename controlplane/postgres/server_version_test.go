package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestServerVersion names the server the suite ran against, and when
// QL3_PG_EXPECT_MAJOR is set (.ci/run sets 18 for its second pass) fails
// unless it is that major version, so a CI pass meant for PostgreSQL 18
// can never quietly run on another server.
func TestServerVersion(t *testing.T) {
	var num int
	var text string
	conn := pgtest.NewDB(t).Conn(t)
	if err := conn.QueryRow(context.Background(), `SELECT current_setting('server_version_num')::int, current_setting('server_version')`).Scan(&num, &text); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s", text)
	if want := os.Getenv("QL3_PG_EXPECT_MAJOR"); want != "" {
		if got := strconv.Itoa(num / 10000); got != want {
			t.Fatalf("server is PostgreSQL %s (major %s), QL3_PG_EXPECT_MAJOR=%s", text, got, want)
		}
	}
}
