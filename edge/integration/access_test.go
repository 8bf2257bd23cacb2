//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/cli"
	"github.com/ql3/ql3/worker/clock"
)

// cliWith runs a CLI command against s with extra environment variables.
func cliWith(s *server, vars map[string]string, stdin string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Version: "test",
		Getenv: func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return map[string]string{"QL3_ADDR": s.base, "QL3_DATA_DIR": s.dataDir}[k]
		},
	})
	return code, stdout.String(), stderr.String()
}

// TestAccessCommands: the token, app and user commands against a real
// server. A scoped token made by `token create` works for its scope and is
// refused outside it (exit 5); `app create` prints credentials a QingLong
// tool exchanges for a token; `user add` reads the password from stdin and
// the sign-in log shows the attempts.
func TestAccessCommands(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"), clock.NewFake(t0))
	code, out, errOut := cliWith(s, nil, "", "token", "create", "--name", "ci", "--scope", "read-only")
	if code != 0 || !strings.HasPrefix(out, "ql3c_") || !strings.Contains(errOut, "shown this once") {
		t.Fatalf("token create: %d %q %q", code, out, errOut)
	}
	scoped := map[string]string{"QL3_TOKEN": strings.TrimSpace(out)}
	if code, _, errOut = cliWith(s, scoped, "", "task", "list"); code != 0 {
		t.Fatalf("read-only token, task list: %d %s", code, errOut)
	}
	if code, _, errOut = cliWith(s, scoped, "", "env", "list"); code != cli.ExitUnauthorized || !strings.Contains(errOut, "read-only") {
		t.Fatalf("read-only token, env list: %d %s", code, errOut)
	}
	if code, out, _ = cliWith(s, nil, "", "token", "list"); code != 0 || !strings.Contains(out, "ci") || strings.Contains(out, scoped["QL3_TOKEN"]) {
		t.Fatalf("token list: %d %s", code, out)
	}

	code, out, _ = cliWith(s, nil, "", "app", "create", "--name", "refresher", "--scope", "envs")
	if code != 0 || !strings.Contains(out, "client_id=") {
		t.Fatalf("app create: %d %s", code, out)
	}
	creds := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		creds[k] = v
	}
	resp, err := http.Get(s.base + "/open/auth/token?client_id=" + creds["client_id"] + "&client_secret=" + creds["client_secret"])
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Code int `json:"code"`
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if ans.Code != 200 || ans.Data.Token == "" {
		t.Fatalf("open token: %+v", ans)
	}

	if code, _, errOut = cliWith(s, nil, "correct horse\n", "user", "add", "alice"); code != 0 {
		t.Fatalf("user add: %d %s", code, errOut)
	}
	r, err := http.Post(s.base+"/api/v1/session/password", "application/json", strings.NewReader(`{"username":"alice","password":"nope nope"}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if code, out, _ = cliWith(s, nil, "", "user", "signins"); code != 0 || !strings.Contains(out, "bad_password") {
		t.Fatalf("signins: %d %s", code, out)
	}
	if code, out, _ = cliWith(s, nil, "", "user", "list"); code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("user list: %d %s", code, out)
	}
}
