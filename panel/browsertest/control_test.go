package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestControlPanel drives the panel against a real ql3-control on a
// PostgreSQL cluster the harness starts: the same form, then what only the
// cluster has — why a queued Run waits (no worker session yet) and
// cancelling it; then a real ql3-worker joins over mTLS, a Run's log lines
// arrive live through the cluster and the tail stops at completion, a
// running Run is cancelled, and the workers page shows both workers.
func TestControlPanel(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	db := cluster.NewDB(t)
	dsn := db.DSN("")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "ql3-control"), "token", "create", "--name", "panel")
	cmd.Env = append(os.Environ(), "QL3_DSN="+dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	cancel()
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, stderr.String())
	}
	tok := strings.TrimSpace(string(out))
	// A dev PKI for the worker ingress (ql3-control pki, as scripts/cluster.sh).
	pki := filepath.Join(dir, "pki")
	ctl(t, nil, "pki", "init", "--dir", pki)
	ctl(t, nil, "pki", "issue-server", "--dir", pki, "--host", "127.0.0.1,localhost")
	logPath := filepath.Join(dir, "control.log")
	p := start(t, "ql3-control", []string{"serve", "--dsn", dsn, "--listen", "127.0.0.1:0", "--log-format", "json",
		"--ingress-listen", "127.0.0.1:0", "--ingress-tls-cert", filepath.Join(pki, "ingress.crt"),
		"--ingress-tls-key", filepath.Join(pki, "ingress.key"), "--ingress-client-ca", filepath.Join(pki, "ca.crt")}, nil, logPath)
	addr := loggedAddr(t, p, logPath, "admin API listening", "addr")
	ingress := loggedAddr(t, p, logPath, "worker ingress listening", "addr")
	base := "http://" + addr
	waitReady(t, p, base+"/readyz", logPath)
	rel := filepath.Join(dir, "release")
	if err := os.Mkdir(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	tg := target{name: "ql3-control", base: base, token: tok, release: rel, project: "demo"}
	adminCall(t, tg, "POST", "/api/v1/projects", map[string]string{"name": "demo"}, 201)
	adminCall(t, tg, "POST", "/api/v1/workers", map[string]string{"name": "router-1"}, 201)
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := []string{"QL3_SERVER=" + base, "QL3_TOKEN_FILE=" + tokFile}

	tab := createThroughForm(t, tg)
	prefix := tg.name + "-"
	shot(t, tab, prefix+"task-list")
	runID := runNow(t, tab, tg)
	var why string
	do(t, tab, "why it waits",
		poll(textOf("#run-status")+".includes('queued')"),
		poll(`!!document.querySelector('#waiting')`),
	)
	why = get(t, tab, "wait reason", chromedp.Text(css("#waiting")))
	if !strings.Contains(why, "Why it waits") || !strings.Contains(why, "no_live_session") {
		t.Errorf("wait explanation %q", why)
	}
	shot(t, tab, prefix+"run-waiting")
	do(t, tab, "cancel a queued Run",
		chromedp.Click(css("#cancel")),
		poll(textOf("#run-status")+".includes('cancelled')"),
	)
	do(t, tab, "runs filtered by status and origin",
		hash("#/runs?status=cancelled&origin=manual"),
		poll(`document.querySelectorAll('#runs tbody tr').length === 1`),
		poll(textOf("#runs")+".includes("+jsq(runID[:13])+")"),
	)

	// A real worker (mTLS, its credential) joins: a Run's log arrives live
	// through the cluster, and a running Run is cancelled.
	identity := strings.TrimSpace(ctl(t, nil, "pki", "issue-worker", "--dir", pki, "--name", "w1"))
	ctl(t, cli, "worker", "register", "--name", "w1", "--tls-identity", identity)
	wdir := filepath.Join(pki, "workers", "w1")
	ctl(t, cli, "worker", "issue-credential", "--id", "w1", "--credential-file", filepath.Join(wdir, "credential"))
	state := filepath.Join(dir, "w1-state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	start(t, "ql3-worker", nil, []string{"QL3_INGRESS_URL=https://" + ingress, "QL3_CREDENTIAL_FILE=" + filepath.Join(wdir, "credential"),
		"QL3_CERT_FILE=" + filepath.Join(wdir, "client.crt"), "QL3_KEY_FILE=" + filepath.Join(wdir, "client.key"),
		"QL3_CA_FILE=" + filepath.Join(wdir, "ca.crt"), "QL3_STATE_DIR=" + state, "QL3_PROFILE=node", "QL3_LOG_LEVEL=info"},
		filepath.Join(dir, "w1.log"))
	do(t, tab, "worker online",
		hash("#/workers"),
		poll(textOf("#workers")+".includes('w1') && "+textOf("#workers")+".includes('online')"),
	)
	do(t, tab, "to the task", hash("#/tasks"), chromedp.WaitVisible(css(`#tasks tr[data-task="panel-demo"]`)))
	live := runNow(t, tab, tg)
	do(t, tab, "first line live through the cluster",
		poll(textOf("#log")+".includes('first') && "+textOf("#run-status")+".includes('running')"),
	)
	if l := get(t, tab, "log so far", chromedp.TextContent(css("#log"))); strings.Contains(l, "second") {
		t.Fatalf("log shows %q before the Run was released", l)
	}
	shot(t, tab, prefix+"run-live-log")
	release(t, tg, live)
	do(t, tab, "second line live, tail stops at completion",
		poll(textOf("#log")+".includes('second') && "+textOf("#run-status")+".includes('succeeded')"),
		poll(`document.querySelector('#log-state').getAttribute('data-complete') === 'true'`),
	)
	do(t, tab, "back to tasks", hash("#/tasks"), chromedp.WaitVisible(css(`#tasks tr[data-task="panel-demo"]`)))
	runNow(t, tab, tg)
	do(t, tab, "cancel a running Run",
		poll(textOf("#log")+".includes('first') && "+textOf("#run-status")+".includes('running')"),
		chromedp.Click(css("#cancel")),
		poll(textOf("#run-status")+".includes('cancelled')"),
	)
	do(t, tab, "all runs", hash("#/runs"), poll(`document.querySelectorAll('#runs tbody tr').length === 3`))
	// The Exit column shows the latest attempt's exit code (#27): 0 for the
	// Run that succeeded, "—" for the one cancelled before it started.
	exitOf := func(run string) string {
		return get(t, tab, "exit of "+run, chromedp.Evaluate[string](`(() => { const tr = [...document.querySelectorAll('#runs tbody tr')]
			.find((r) => r.textContent.includes(`+jsq(run[:13])+`)); return tr ? tr.querySelector('td[data-label="Exit"]').textContent : "no row" })()`))
	}
	if got := exitOf(live); got != "0" {
		t.Errorf("Exit column of the succeeded Run: %q, want 0", got)
	}
	if got := exitOf(runID); got != "—" {
		t.Errorf("Exit column of the Run cancelled while queued: %q, want —", got)
	}
	shot(t, tab, prefix+"runs-list")
	do(t, tab, "workers",
		hash("#/workers"),
		poll(textOf("#workers")+".includes('router-1') && "+textOf("#workers")+".includes('no session') && "+textOf("#workers")+".includes('online')"),
	)
	shot(t, tab, prefix+"workers")
	controlScriptsPage(t, tab, tg) // control_scripts_test.go
	controlDepsPage(t, tab, tg)    // control_deps_test.go
	do(t, tab, "delete confirmed",
		hash("#/tasks"),
		chromedp.WaitVisible(css(`#tasks tr[data-task="panel-demo"]`)),
		jsRun(`window.confirm = () => true`),
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] .delete`)),
		chromedp.WaitNotPresent(css(`#tasks tr[data-task="panel-demo"]`)),
	)
	signOutAndCrossOrigin(t, tab, tg)
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-control log:\n%s", out)
	}
}

// adminCall makes one bearer-token request to the admin API.
func adminCall(t *testing.T, tg target, method, path string, body any, want int) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, tg.base+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if tg.token != "" { // an edge with --no-auth takes none
		req.Header.Set("Authorization", "Bearer "+tg.token)
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b.String())
	}
}

// ctl runs one ql3-control command and returns its standard output.
func ctl(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "ql3-control"), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ql3-control %s: %v\n%s", args[0], err, stderr.String())
	}
	return string(out)
}
