package browsertest

import (
	"archive/zip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// controlDepsPage drives the Dependencies page against ql3-control (ADR
// 0062) with the cluster's real worker w1: a python package from a local
// wheel folder installed through the page (one Run on w1, w1's status
// shown), a node package from a local registry, a script Run on w1 that
// imports and one that requires them; a reinstall stalled by a registry
// that never answers is cancelled from the page; a dependency whose labels
// no worker has starts no Run. Nothing leaves the machine.
func controlDepsPage(t *testing.T, tab context.Context, tg target) {
	t.Helper()
	dir := t.TempDir()
	wheels := filepath.Join(dir, "wheels")
	if err := os.MkdirAll(wheels, 0o755); err != nil {
		t.Fatal(err)
	}
	writeWheel(t, wheels)
	const base = "/api/v1/projects/demo/dependencies"
	adminCall(t, tg, "PUT", base+"/settings/python", map[string]string{"kind": "python", "registry": "file://" + wheels}, 200)
	do(t, tab, "install a python package from the page",
		hash("#/deps?project=demo"),
		chromedp.WaitVisible(css("#dep-project")),
		chromedp.SetValue(css("#dep-kind"), "python"),
		chromedp.SendKeys(css("#dep-name"), "ql3tiny"),
		chromedp.SendKeys(css("#dep-version"), "1.0"),
		chromedp.Click(css("#dep-add")),
		poll(`!!document.querySelector('#deps tr[data-dep="ql3tiny"] li[data-worker="w1"]')`),
		poll(`document.querySelector('#deps tr[data-dep="ql3tiny"]').dataset.state === 'installed'`),
		poll(`document.querySelector('#deps tr[data-dep="ql3tiny"] li[data-worker="w1"]').dataset.state === 'installed'`),
	)
	shot(t, tab, tg.name+"-deps-installed")
	scriptRun(t, tab, tg, "deps/use.py", "import ql3tiny\nprint(ql3tiny.hello())\n", "tiny py ok")

	reg, stall := npmRegistries(t, dir)
	adminCall(t, tg, "PUT", base+"/settings/node", map[string]string{"kind": "node", "registry": reg}, 200)
	adminCall(t, tg, "POST", base, map[string]any{"kind": "node", "name": "ql3-tiny"}, 201)
	do(t, tab, "the node package installed on w1",
		hash("#/deps?project=demo&n=1"),
		poll(`(document.querySelector('#deps tr[data-dep="ql3-tiny"]') || {dataset: {}}).dataset.state === 'installed'`),
	)
	scriptRun(t, tab, tg, "deps/use.js", "console.log(require('ql3-tiny')());\n", "tiny ok")

	adminCall(t, tg, "PUT", base+"/settings/node", map[string]string{"kind": "node", "registry": stall}, 200)
	do(t, tab, "a stalled reinstall cancelled from the page",
		hash("#/deps?project=demo&n=2"),
		chromedp.WaitVisible(css(`#deps tr[data-dep="ql3-tiny"] .dep-reinstall`)),
		chromedp.Click(css(`#deps tr[data-dep="ql3-tiny"] .dep-reinstall`)),
		poll(`document.querySelector('#deps tr[data-dep="ql3-tiny"]').dataset.state === 'installing'`),
		chromedp.Click(css(`#deps tr[data-dep="ql3-tiny"] .dep-cancel`)),
		poll(`(document.querySelector('#deps tr[data-dep="ql3-tiny"] li[data-worker="w1"]') || {dataset: {}}).dataset.state === 'cancelled'`),
	)
	shot(t, tab, tg.name+"-deps-cancelled")

	var made struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if code, body := apiRaw(t, tg, "POST", base, []byte(`{"kind":"python","name":"requests","labels":{"zone":"nowhere"}}`), "Content-Type", "application/json"); code != 201 {
		t.Fatalf("a dependency no worker matches: %d %s", code, body)
	} else if err := json.Unmarshal([]byte(body), &made); err != nil || len(made.Runs) != 0 {
		t.Fatalf("a dependency no worker matches started Runs: %s", body)
	}
	do(t, tab, "no worker yet",
		hash("#/deps?project=demo&n=3"),
		poll(`(document.querySelector('#deps tr[data-dep="requests"]') || {textContent: ''}).textContent.includes('zone=nowhere')`),
	)
}

// scriptRun writes a script into project demo's folder, runs it on the
// cluster and waits for its log line.
func scriptRun(t *testing.T, tab context.Context, tg target, path, program, want string) {
	t.Helper()
	if code, body := apiRaw(t, tg, "PUT", "/api/v1/projects/demo/scripts/content?path="+path, []byte(program), "If-Match", "*"); code != 200 && code != 201 {
		if code, body = apiRaw(t, tg, "PUT", "/api/v1/projects/demo/scripts/content?path="+path, []byte(program), "If-None-Match", "*"); code != 201 {
			t.Fatalf("write %s: %d %s", path, code, body)
		}
	}
	code, body := apiRaw(t, tg, "POST", "/api/v1/projects/demo/scripts/run",
		[]byte(`{"path":`+strconv.Quote(path)+`,"idempotencyKey":"deps-`+strings.ReplaceAll(path, "/", "-")+`"}`), "Content-Type", "application/json")
	var run struct{ ID string }
	if code != 201 || json.Unmarshal([]byte(body), &run) != nil || run.ID == "" {
		t.Fatalf("run %s: %d %s", path, code, body)
	}
	do(t, tab, "run "+path+" on w1",
		hash("#/runs/"+run.ID),
		poll(textOf("#run-status")+".includes('succeeded')"),
		poll(textOf("#log")+".includes("+jsq(want)+")"),
	)
}

// writeWheel writes a pure-Python wheel of module ql3tiny.
func writeWheel(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "ql3tiny-1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	files := [][2]string{
		{"ql3tiny/__init__.py", "def hello():\n    return 'tiny py ok'\n"},
		{"ql3tiny-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: ql3tiny\nVersion: 1.0\n"},
		{"ql3tiny-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: ql3-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, fl := range files {
		w, _ := z.Create(fl[0])
		_, _ = w.Write([]byte(fl[1]))
		sum := sha256.Sum256([]byte(fl[1]))
		record.WriteString(fl[0] + ",sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]) + "," + strconv.Itoa(len(fl[1])) + "\n")
	}
	record.WriteString("ql3tiny-1.0.dist-info/RECORD,,\n")
	w, _ := z.Create("ql3tiny-1.0.dist-info/RECORD")
	_, _ = w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// npmRegistries serves one package made by `npm pack` as a registry does
// (reg), and a registry that never answers until the test ends (stall).
func npmRegistries(t *testing.T, dir string) (reg, stall string) {
	t.Helper()
	src := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(src, "package.json"), []byte(`{"name":"ql3-tiny","version":"1.0.0","main":"index.js"}`), 0o644)
	_ = os.WriteFile(filepath.Join(src, "index.js"), []byte(`module.exports = () => "tiny ok";`), 0o644)
	cmd := exec.Command("npm", "pack", "--silent")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, "npm-cache"), "npm_config_update_notifier=false")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack: %v", err)
	}
	tgz, err := os.ReadFile(filepath.Join(src, strings.TrimSpace(string(out))))
	if err != nil {
		t.Fatal(err)
	}
	s1, s512 := sha1.Sum(tgz), sha512.Sum512(tgz)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ql3-tiny":
			_ = json.NewEncoder(w).Encode(map[string]any{"name": "ql3-tiny", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": "ql3-tiny", "version": "1.0.0", "main": "index.js",
					"dist": map[string]string{"tarball": srv.URL + "/ql3-tiny/-/ql3-tiny-1.0.0.tgz", "shasum": hex.EncodeToString(s1[:]),
						"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:])}}}})
		case "/ql3-tiny/-/ql3-tiny-1.0.0.tgz":
			_, _ = w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stalled.Close)
	t.Cleanup(func() { close(release) })
	return srv.URL + "/", stalled.URL + "/"
}
