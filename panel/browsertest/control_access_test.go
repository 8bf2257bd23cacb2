package browsertest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestControlAccountSignIn is TestEdgeAccountSignIn against a real
// ql3-control (ADR 0060): the Access page adds an account and turns its
// second factor on, a scoped token is shown once, password + TOTP signs
// in, and ten wrong passwords lock the account past the right one.
func TestControlAccountSignIn(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	db := cluster.NewDB(t)
	dsn := db.DSN("")
	dir := t.TempDir()
	token := strings.TrimSpace(ctl(t, []string{"QL3_DSN=" + dsn}, "token", "create", "--name", "panel"))
	logPath := filepath.Join(dir, "control.log")
	p := start(t, "ql3-control", []string{"serve", "--dsn", dsn, "--listen", "127.0.0.1:0", "--log-format", "json",
		"--no-scheduler"}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "admin API listening", "addr")
	waitReady(t, p, base+"/readyz", logPath)
	accountSignInStory(t, target{name: "ql3-control", base: base, token: token})
}
