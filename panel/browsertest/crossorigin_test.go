package browsertest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// attackerPage is what a web page the user visits could run against a
// ql3-edge on this machine (issue #13): a "simple" cross-site POST that
// needs no CORS preflight (no-cors, text/plain), a JSON POST (preflighted),
// a run-now and a form submission. It reports "done" when all settled.
const attackerPage = `<!doctype html><title>attacker</title>
<form id=f method=POST enctype=text/plain target=sink><input name='{"x":"' value='"}'></form>
<iframe name=sink></iframe>
<script>
const api = %q;
const task = JSON.stringify({name: "pwned", spec: {kind: "qinglong/command@v1", shell: {command: "touch /tmp/ql3-pwned"}}});
(async () => {
  const tries = [
    fetch(api + "/api/v1/tasks", {method: "POST", mode: "no-cors", body: task}),
    fetch(api + "/api/v1/tasks", {method: "POST", headers: {"Content-Type": "application/json"}, body: task}),
    fetch(api + "/api/v1/tasks/hello/runs", {method: "POST", mode: "no-cors"}),
    fetch(api + "/api/v1/tasks/hello", {method: "DELETE", mode: "no-cors"}),
  ];
  await Promise.allSettled(tries);
  const f = document.getElementById("f");
  f.action = api + "/api/v1/tasks/hello/disable";
  f.submit();
  setTimeout(() => { document.title = "done"; }, 500);
})();
</script>`

// TestCrossOriginPageCannotDriveTheEdge: a real browser on a page of
// another origin (localhost:P vs the edge's 127.0.0.1:Q) cannot create,
// run, delete or disable anything on an edge served with --no-auth.
func TestCrossOriginPageCannotDriveTheEdge(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--log-format", "json", "--no-auth"}, nil, logPath)
	addr := loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	base := "http://" + addr
	waitReady(t, p, base+"/readyz", logPath)

	// A task the page will try to run, delete and disable.
	body := `{"name":"hello","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`
	req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("seed task: %d", resp.StatusCode)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackerPage, base)
	}))
	evil.Listener = ln
	evil.Start()
	defer evil.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	evilURL := "http://localhost:" + port + "/" // another site than 127.0.0.1

	ctx := tab(t)
	do(t, ctx, "open the attacker page", chromedp.Navigate(evilURL),
		chromedp.Poll[chromedp.Void](`document.title === "done"`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))

	var list struct {
		Items []struct {
			Name    string `json:"name"`
			Enabled bool   `json:"enabled"`
		} `json:"items"`
	}
	resp, err = http.Get(base + "/api/v1/tasks")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "hello" || !list.Items[0].Enabled {
		t.Fatalf("the cross-origin page changed the edge: %+v", list.Items)
	}
	resp, err = http.Get(base + "/api/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	var runs struct{ Items []json.RawMessage }
	err = json.NewDecoder(resp.Body).Decode(&runs)
	resp.Body.Close()
	if err != nil || len(runs.Items) != 0 {
		t.Fatalf("the cross-origin page started a run: %d runs, %v", len(runs.Items), err)
	}
}
