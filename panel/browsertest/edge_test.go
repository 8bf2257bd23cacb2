package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
