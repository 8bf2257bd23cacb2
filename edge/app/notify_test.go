package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/notify"
)

// TestScriptsSendNotify: a .js script calling require('./sendNotify') and
// a .py script calling notify.send — QingLong's call shapes — reach the
// fake channel through the edge's outbox, with the Run's own token.
func TestScriptsSendNotify(t *testing.T) {
	got := make(chan string, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer hook.Close()

	dir := filepath.Join(t.TempDir(), "data")
	m, _, err := startTestMain(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	scripts := filepath.Join(dir, ScriptsDirName)
	for _, f := range notify.ModuleFiles {
		if _, err := os.Stat(filepath.Join(scripts, f)); err != nil {
			t.Fatalf("module %s not shipped: %v", f, err)
		}
	}
	if err := os.WriteFile(filepath.Join(scripts, "check_in.js"), []byte(
		"const { sendNotify } = require('./sendNotify');\nsendNotify('t', 'c from js');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "check_in.py"), []byte(
		"from notify import send\nsend('t', 'c from py')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api := func(method, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+m.Addr()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+m.NewAdminToken())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return b
	}
	var ch struct{ ID string }
	json.Unmarshal(api("POST", "/api/v1/notify/channels", `{"name":"hook","settings":{"kind":"webhook","server":"`+hook.URL+`"}}`), &ch)
	api("POST", "/api/v1/notify/rules", `{"name":"scripts","kinds":["script"],"channels":["`+ch.ID+`"]}`)
	for _, tc := range []struct{ name, cmd string }{
		{"js", "node check_in.js"},
		{"py", "python3 check_in.py"},
	} {
		api("POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"%s","spec":{"kind":"qinglong/command@v1","shell":{"command":"%s"},
			"workingDirectory":"%s"}}`, tc.name, tc.cmd, scripts))
		api("POST", "/api/v1/tasks/"+tc.name+"/runs", "")
		select {
		case body := <-got:
			var msg map[string]any
			if err := json.Unmarshal([]byte(body), &msg); err != nil || msg["title"] != "t" || msg["content"] != "c from "+tc.name {
				t.Fatalf("%s: the channel got %s", tc.name, body)
			}
		case <-time.After(20 * time.Second): // a bound on a real process, not a wait for time to pass
			var rl struct{ Items []struct{ ID string } }
			runs := api("GET", "/api/v1/runs?limit=5", "")
			json.Unmarshal(runs, &rl)
			if len(rl.Items) > 0 {
				runs = append(runs, api("GET", "/api/v1/runs/"+rl.Items[0].ID+"/attempts/1/log", "")...)
			}
			t.Fatalf("%s: nothing reached the channel; runs %s; deliveries %s", tc.name, runs, api("GET", "/api/v1/notify/deliveries", ""))
		}
	}
}
