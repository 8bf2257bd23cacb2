package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/edge/sqlite"
)

// TestNotifyCommands drives notify channel|rule|test|deliveries against
// the real API over SQLite; the credential goes in through stdin and never
// comes back out.
func TestNotifyCommands(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	kek, err := envcrypt.CreateKeyFile(filepath.Join(dir, "env.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.UnlockEnv(ctx, kek); err != nil {
		t.Fatal(err)
	}
	d, err := notify.New(notify.Config{Store: store, Feed: store, Runs: store})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := httpapi.NewAdminToken()
	api := httptest.NewServer(httpapi.New(httpapi.Config{Store: store, Envs: store, Auth: httpapi.Auth{Digest: httpapi.DigestToken(tok)},
		Notify: &httpapi.NotifyConfig{Store: store, Deliverer: d}}))
	defer api.Close()
	var got []string
	bark := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	defer bark.Close()

	run := func(stdin string, args ...string) (string, int) {
		e, out, errOut := testEnv(map[string]string{"QL3_TOKEN": tok})
		e.Stdin = strings.NewReader(stdin)
		code := Run(ctx, append(args, "--addr", api.URL), e)
		return out.String() + errOut.String(), code
	}
	out, code := run(`{"token":"bark-DEVICE-key"}`, "notify", "channel", "add", "--name", "phone", "--kind", "bark", "--server", bark.URL, "--secrets-file", "-", "--json")
	if code != 0 || strings.Contains(out, "bark-DEVICE-key") {
		t.Fatalf("channel add: %d %s", code, out)
	}
	id := between(out, `"id": "`, `"`)
	if out, code = run("", "notify", "rule", "add", "--name", "all", "--channel", id, "--kind", "failed", "--quiet", "23:00-07:00",
		"--quiet-zone", "Asia/Shanghai", "--coalesce-max", "3", "--coalesce-window", "10m"); code != 0 || !strings.Contains(out, "added rule all") {
		t.Fatalf("rule add: %d %s", code, out)
	}
	if out, code = run("", "notify", "test", id); code != 0 || !strings.Contains(out, "delivered") || len(got) != 1 {
		t.Fatalf("test: %d %s (receiver got %d)", code, out, len(got))
	}
	if !strings.Contains(got[0], `"device_key":"bark-DEVICE-key"`) {
		t.Fatalf("bark got %s", got[0])
	}
	for _, args := range [][]string{{"notify", "channel", "list"}, {"notify", "rule", "list"}, {"notify", "deliveries"}} {
		out, code := run("", args...)
		if code != 0 || strings.Contains(out, "bark-DEVICE-key") {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	if out, code = run("", "notify", "channel", "rm", id); code != ExitConflict {
		t.Fatalf("removing a channel a rule uses: %d %s", code, out)
	}
	if out, code = run("", "notify", "rule", "add", "--name", "bad", "--channel", id, "--quiet", "23:00"); code != ExitUsage {
		t.Fatalf("bad --quiet: %d %s", code, out)
	}
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}
