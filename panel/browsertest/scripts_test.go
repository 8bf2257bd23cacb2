package browsertest

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// apiRaw sends bytes to the API with the bearer token and returns the
// status and body.
func apiRaw(t *testing.T, tg target, method, path string, body []byte, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, tg.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tg.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEdgeScriptsPage drives the Scripts page of a real ql3-edge: a new
// file through the panel, typed into the editor (line numbers and
// colouring), saved; a save over a version another editor changed
// meanwhile is refused and said so (the server keeps the other version);
// reload; Run now with the live log beside the editor (a sibling module
// loads, the env store's value reaches the script); an archive upload.
func TestEdgeScriptsPage(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--log-format", "json"}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	waitReady(t, p, base+"/readyz", logPath)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	tg := target{name: "ql3-edge", base: base, token: strings.TrimSpace(string(tok))}
	if code, body := apiRaw(t, tg, "PUT", "/api/v1/scripts/content?path=lib/util.js", []byte("exports.x = 42;\n"), "If-None-Match", "*"); code != 201 {
		t.Fatalf("seed util.js: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/envs", strings.NewReader(`{"name":"GREETING","value":"from-the-store","enabled":true}`))
	req.Header.Set("Authorization", "Bearer "+tg.token)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("env: %v %v", resp, err)
	}
	ctx := tab(t)
	do(t, ctx, "open", chromedp.Navigate(base+"/#/scripts"))
	signIn(t, ctx, tg)

	program := "const u = require('./util');\nconsole.log('hello', u.x, process.env.QL3_SCRIPT, process.env.GREETING.toUpperCase());\n"
	do(t, ctx, "new file, typed and saved",
		chromedp.WaitVisible(css("#nav-scripts")),
		hash("#/scripts"),
		chromedp.WaitVisible(css("#script-list")),
		poll(`!!document.querySelector('#script-list li[data-name="lib"]')`),
		jsRun("window.prompt = () => 'lib/main.js'"),
		chromedp.Click(css("#script-new-file")),
		chromedp.WaitVisible(css("#script-editor")),
		poll(textOf("#script-path")+" === 'lib/main.js'"),
		chromedp.SendKeys(css("#script-editor"), program),
		poll(`document.querySelector('#script-state').dataset.dirty === 'true'`),
		chromedp.Click(css("#script-save")),
		poll(`!document.querySelector('#script-state').dataset.dirty`),
	)
	if code, body := apiRaw(t, tg, "GET", "/api/v1/scripts/content?path=lib/main.js", nil); code != 200 || body != program {
		t.Fatalf("saved content: %d %q", code, body)
	}
	// Line numbers and colouring.
	if got := get(t, ctx, "gutter", chromedp.Evaluate[string](textOf(".code-gutter"))); got != "1\n2\n3\n" {
		t.Errorf("gutter %q", got)
	}
	if got := get(t, ctx, "tokens", chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.code-layer span')).map(s => s.className + '=' + s.textContent).slice(0, 3).join('|')`)); got != "tok-keyword=const|tok-keyword=require|tok-string='./util'" {
		t.Errorf("highlighting %q", got)
	}
	shot(t, ctx, "ql3-edge-scripts-editor")

	// Another editor saves first: this one's save is refused, the server
	// keeps the other version, the page says so; reload shows it.
	other := "console.log('other editor');\n"
	if code, body := apiRaw(t, tg, "PUT", "/api/v1/scripts/content?path=lib/main.js", []byte(other), "If-Match", "*"); code != 200 {
		t.Fatalf("other editor: %d %s", code, body)
	}
	do(t, ctx, "stale save refused",
		chromedp.SendKeys(css("#script-editor"), "// mine\n"),
		chromedp.Click(css("#script-save")),
		chromedp.WaitVisible(css("#script-conflict")),
	)
	if _, body := apiRaw(t, tg, "GET", "/api/v1/scripts/content?path=lib/main.js", nil); body != other {
		t.Fatalf("the stale save overwrote: %q", body)
	}
	shot(t, ctx, "ql3-edge-scripts-conflict")
	do(t, ctx, "reload shows the server's version",
		chromedp.Click(css("#script-reload")),
		poll(`document.querySelector('#script-editor') && document.querySelector('#script-editor').value === `+jsq(other)),
		poll(`document.querySelector('#script-conflict').hidden`),
	)
	// Put the program back through the editor and run it.
	do(t, ctx, "run now with the live log",
		clear("#script-editor"),
		chromedp.SendKeys(css("#script-editor"), program),
		chromedp.Click(css("#script-save")),
		poll(`!document.querySelector('#script-state').dataset.dirty`),
		chromedp.Click(css("#script-run")),
		poll(`document.querySelector('#script-log-state').dataset.status === 'succeeded'`),
	)
	if got := get(t, ctx, "log", chromedp.Evaluate[string](textOf("#script-log"))); got != "hello 42 lib/main.js FROM-THE-STORE\n" {
		t.Errorf("run log %q", got)
	}
	shot(t, ctx, "ql3-edge-scripts-run")

	// Upload an archive of a folder into the top folder.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "pkg/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "pkg/a.py", Typeflag: tar.TypeReg, Mode: 0o644, Size: 9})
	tw.Write([]byte("print(1)\n"))
	tw.Close()
	archive := filepath.Join(dir, "pkg.tar")
	if err := os.WriteFile(archive, tb.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// Leave the editor first and wait for another page: a late redraw of
	// the editor's page (its log follow) must not replace the upload input
	// after the file is set on it (seen on a loaded machine).
	do(t, ctx, "leave the editor",
		jsRun(`document.getElementById("main").replaceChildren()`),
		hash("#/tasks"),
		poll(`!!document.querySelector("#main h1")`),
	)
	do(t, ctx, "upload a folder",
		jsRun(`document.getElementById("main").replaceChildren()`),
		hash("#/scripts?dir="),
		chromedp.WaitVisible(css("#script-list")),
		chromedp.SetUploadFiles(css("#script-upload"), []string{archive}),
		poll(`!!document.querySelector('#script-list li[data-name="pkg"]')`),
	)
	if code, body := apiRaw(t, tg, "GET", "/api/v1/scripts/content?path=pkg/a.py", nil); code != 200 || body != "print(1)\n" {
		t.Fatalf("uploaded file: %d %q", code, body)
	}
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-edge log:\n%s", out)
	}
}
