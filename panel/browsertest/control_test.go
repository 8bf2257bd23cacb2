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
// cluster has — why a queued Run waits (no worker session), cancelling
// it, and the workers page.
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
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "control.log")
	p := start(t, "ql3-control", []string{"serve", "--dsn", dsn, "--listen", addr}, nil, logPath)
	base := "http://" + addr
	waitReady(t, p, base+"/readyz", logPath)
	tg := target{name: "ql3-control", base: base, token: tok, release: dir, project: "demo"}
	adminCall(t, tg, "POST", "/api/v1/projects", map[string]string{"name": "demo"}, 201)
	adminCall(t, tg, "POST", "/api/v1/workers", map[string]string{"name": "router-1"}, 201)

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
	shot(t, tab, prefix+"runs-list")
	do(t, tab, "workers",
		hash("#/workers"),
		poll(textOf("#workers")+".includes('router-1') && "+textOf("#workers")+".includes('no session')"),
	)
	shot(t, tab, prefix+"workers")
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
	req.Header.Set("Authorization", "Bearer "+tg.token)
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
