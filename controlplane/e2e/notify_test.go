package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClusterSendNotify (issue 23, ADR 0053): the edge's shipped
// sendNotify.js and notify.py, unchanged in a project's scripts folder,
// called as sendNotify('t', 'c') by scripts on a remote worker, reach a
// webhook channel through the cluster's outbox; the token a Run's process
// got is refused once the Run is over.
func TestClusterSendNotify(t *testing.T) {
	c := newCluster(t)
	key := filepath.Join(c.dir, "notify.key")
	c.mustCLI("env", "key-init", "--out", key)
	cp := c.startControl("--secret-key-file", key)
	c.addWorker("w1", cp)
	c.waitOnline("w1")

	var mu sync.Mutex
	var got []string // "title|content" per webhook request
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Title, Content string }
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &m)
		mu.Lock()
		got = append(got, m.Title+"|"+m.Content)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)

	c.mustCLI("project", "create", "--name", "e2e")
	out := c.cliStdin(`{"kind":"webhook","server":"`+hook.URL+`/hook"}`, "notify", "channel-add", "--project", "e2e", "--name", "hook", "--settings-file", "-")
	_, id, _ := strings.Cut(strings.TrimSpace(out), "(") // "added webhook channel hook (<id>)"
	id = strings.TrimSuffix(id, ")")
	if id == "" {
		t.Fatalf("channel-add: %q", out)
	}
	c.mustCLI("notify", "rule-add", "--project", "e2e", "--name", "scripts", "--channel", id, "--kinds", "script")

	for _, m := range []string{"sendNotify.js", "notify.py"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "edge", "notify", "modules", m))
		if err != nil {
			t.Fatal(err)
		}
		c.putScript("n/"+m, string(body), "")
	}
	c.putScript("n/main.js", "const { sendNotify } = require('./sendNotify');\n"+
		"console.log('token ' + process.env.QL3_NOTIFY_URL + ' ' + process.env.QL3_NOTIFY_TOKEN);\n"+
		"sendNotify('t', 'c').then(() => console.log('done'));\n", "")
	c.putScript("n/main.py", "from notify import send\nsend('t', 'c')\n", "")
	js := c.createTask("notify-js", `{"kind":"qinglong/command@v1","script":{"file":"n/main.js"},"concurrency":"allow"}`)
	py := c.createTask("notify-py", `{"kind":"qinglong/command@v1","script":{"file":"n/main.py"},"concurrency":"allow"}`)
	runs := map[string]string{}
	for name, task := range map[string]string{"js": js, "py": py} {
		run := c.runNow(task)
		c.waitFinished(run)
		runs[name] = run
		if st, log := c.runStatus(run), c.stdout(run); st != "succeeded" || !strings.Contains(log, "queued for 1 channel(s)") {
			t.Errorf("%s run %s: %s, stdout %q", name, run, st, log)
		}
	}
	c.eventually(60*time.Second, "both messages at the webhook", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	for _, g := range got {
		if g != "t|c" {
			t.Errorf("webhook got %q, want t|c", g)
		}
	}
	mu.Unlock()

	// The js Run printed its URL and token; the Run is over, so both are
	// refused.
	var url, token string
	for _, line := range strings.Split(c.stdout(runs["js"]), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "token" {
			url, token = f[1], f[2]
		}
	}
	if url == "" || token == "" {
		t.Fatalf("no URL and token in the js Run's output")
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"title":"late","content":"c"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(answer), "unauthorized") {
		t.Errorf("a finished Run's token: %d %s", resp.StatusCode, answer)
	}
}
