package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/core/totp"
)

// The access commands against a migrated database (ADR 0060): a scoped
// token with an expiry, bad scopes and expiries refused by flag name, and
// an account added, given a second factor and removed.
func TestAccessCommands(t *testing.T) {
	cluster := pgtest.Shared(t)
	db := cluster.NewDB(t)
	env := map[string]string{"QL3_DSN": db.DSN("")}

	if _, err := runCmd(t, env, "token", "create", "--name", "ci", "--scope", "runs,read-only", "--expires", "720h"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--scope", "root"}, {"--scope", "runs,runs"}, {"--expires", "2001-01-01T00:00:00Z"}, {"--expires", "soon"}} {
		args := append([]string{"token", "create", "--name", "bad"}, bad...)
		if _, err := runCmd(t, env, args...); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	out, err := runCmd(t, env, "token", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var toks []struct {
		Name        string   `json:"name"`
		Scopes      []string `json:"scopes"`
		ExpiresAtMs int64    `json:"expiresAtMs"`
	}
	if err := json.Unmarshal([]byte(out), &toks); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	soon := time.Now().Add(719 * time.Hour).UnixMilli()
	if len(toks) != 1 || toks[0].Name != "ci" || strings.Join(toks[0].Scopes, ",") != "runs,read-only" || toks[0].ExpiresAtMs < soon {
		t.Fatalf("tokens %+v", toks)
	}

	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, env, "user", "add", "--name", "alice", "--password-file", pw); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, env, "user", "totp-setup", "--name", "alice")
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.Fields(strings.SplitN(out, "\n", 2)[0])[1]
	key, err := totp.DecodeSecret(secret)
	if err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if _, err := runCmd(t, env, "user", "totp-setup", "--name", "alice", "--secret", secret, "--code", "000000"+"0"); err == nil {
		t.Fatal("a wrong code turned the second factor on")
	}
	if _, err := runCmd(t, env, "user", "totp-setup", "--name", "alice", "--secret", secret, "--code", totp.Code(key, time.Now())); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, env, "user", "list")
	if err != nil || !strings.Contains(out, `"totp": true`) || strings.Contains(out, "argon2") || strings.Contains(out, secret) {
		t.Fatalf("user list: %s %v", out, err)
	}
	if _, err := runCmd(t, env, "user", "rm", "--name", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, env, "user", "rm", "--name", "alice"); err == nil {
		t.Fatal("removing a missing account succeeded")
	}
}
