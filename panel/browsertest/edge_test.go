package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEdgePanel drives the panel against a real ql3-edge.
func TestEdgePanel(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	rel := filepath.Join(dir, "release")
	if err := os.Mkdir(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--log-format", "json", "--kill-grace", "1s"}, nil, logPath)
	addr := loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	base := "http://" + addr
	waitReady(t, p, base+"/readyz", logPath)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	panelFlow(t, target{name: "ql3-edge", base: base, token: strings.TrimSpace(string(tok)), release: rel})
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-edge log:\n%s", out)
	}
}

// TestEdgePanelNoAuth: with --no-auth (loopback only) the panel needs no
// sign-in and offers no sign-out; the task and run lists page (50 a page).
func TestEdgePanelNoAuth(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--log-format", "json", "--no-auth"}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	waitReady(t, p, base+"/readyz", logPath)
	tg := target{name: "ql3-edge", base: base}
	for i := range 51 {
		adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"name": fmt.Sprintf("t%02d", i),
			"spec": map[string]any{"kind": "qinglong/command@v1", "argv": map[string]any{"file": "/bin/true"}}}, 201)
	}
	ctx := tab(t)
	do(t, ctx, "no sign-in",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css("#new-task")),
		poll(`document.querySelectorAll('#tasks tbody tr').length === 50 && document.getElementById('signout').hidden`),
		chromedp.Click(css("#more-tasks")),
		poll(`document.querySelectorAll('#tasks tbody tr').length === 1`),
	)
	// The runs list pages too (keyset cursor, "Older runs").
	for i := range 51 {
		adminCall(t, tg, "POST", "/api/v1/tasks/t00/runs", map[string]any{"idempotencyKey": fmt.Sprintf("k%02d", i)}, 201)
	}
	do(t, ctx, "older runs",
		hash("#/runs"),
		poll(`document.querySelectorAll('#runs tbody tr').length === 50`),
		chromedp.Click(css("#older")),
		poll(`document.querySelectorAll('#runs tbody tr').length === 1`),
	)
}
