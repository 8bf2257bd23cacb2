//go:build linux

package integration

import (
	"archive/zip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gate holds requests of a local server until released (a slow network).
type gate struct{ open chan struct{} }

func newGate() *gate     { return &gate{open: make(chan struct{})} }
func (g *gate) wait()    { <-g.open }
func (g *gate) release() { close(g.open) }
func (g *gate) closed() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// tinyRegistry serves one npm package (made with npm pack) like a
// registry; the tarball waits for hold to open.
func tinyRegistry(t *testing.T, hold *gate) *httptest.Server {
	t.Helper()
	src := filepath.Join(t.TempDir(), "pkg")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "package.json"), []byte(`{"name":"ql3-tiny","version":"1.0.0","main":"index.js"}`), 0o644)
	os.WriteFile(filepath.Join(src, "index.js"), []byte(`module.exports = () => "tiny ok";`), 0o644)
	cmd := exec.Command("npm", "pack", "--silent")
	cmd.Dir = src
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
			json.NewEncoder(w).Encode(map[string]any{"name": "ql3-tiny", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": "ql3-tiny", "version": "1.0.0", "main": "index.js",
					"dist": map[string]string{"tarball": srv.URL + "/ql3-tiny/-/ql3-tiny-1.0.0.tgz", "shasum": hex.EncodeToString(s1[:]),
						"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:])}}}})
		case "/ql3-tiny/-/ql3-tiny-1.0.0.tgz":
			select {
			case <-hold.open:
			case <-r.Context().Done():
				return
			}
			w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSubscriptionAndDependencyRuns drives the binary: a pull is a Run of
// the subscription's system task (its log shows the plan), a pull
// cancelled mid-fetch leaves the previous tree, a dependency's install is
// a Run that can be cancelled mid-download, and a task the subscription
// made runs a script that requires the installed package.
func TestSubscriptionAndDependencyRuns(t *testing.T) {
	edgeBinary(t) // built before HOME moves
	dir := t.TempDir()
	t.Setenv("HOME", filepath.Join(dir, "home")) // npm's cache, for the binary and its tasks

	origin := filepath.Join(dir, "repos", "origin")
	os.MkdirAll(origin, 0o755)
	gitIn(t, origin, "init", "--quiet", "--initial-branch=main")
	gitIn(t, origin, "config", "http.receivepack", "false")
	os.WriteFile(filepath.Join(origin, "use_tiny.js"), []byte("// cron: 0 3 * * *\nconst $ = { name: 'x' };\nconsole.log(require('ql3-tiny')());\n"), 0o644)
	os.WriteFile(filepath.Join(origin, "daily.py"), []byte("# cron: 30 7 * * *\n# new Env('每日')\nprint('py')\n"), 0o644)
	gitIn(t, origin, "add", "-A")
	gitIn(t, origin, "commit", "--quiet", "-m", "one")
	git, _ := exec.LookPath("git")
	backend := &cgi.Handler{Path: git, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(origin), "GIT_HTTP_EXPORT_ALL=1"}}
	var slow *gate
	gitSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow != nil && strings.HasSuffix(r.URL.Path, "git-upload-pack") {
			select {
			case <-slow.open:
			case <-r.Context().Done():
				return
			}
		}
		backend.ServeHTTP(w, r)
	}))
	defer gitSrv.Close()

	data := filepath.Join(dir, "data")
	p := startBinary(t, data)
	c := p.client(t, data)
	c.dataDir = data

	var sub httpapi.Subscription
	c.api("POST", "/api/v1/subscriptions", map[string]any{"name": "脚本库", "slug": "repo", "kind": "git", "url": gitSrv.URL + "/origin",
		"branch": "main", "extensions": []string{".js", ".py"}}, 201, &sub)
	var pull httpapi.Run
	c.api("POST", "/api/v1/subscriptions/"+sub.ID+"/pull", nil, 201, &pull)
	done := c.waitRun(pull.ID, "to finish", status("succeeded", "failed", "cancelled", "timed_out"))
	_, log := c.raw("GET", "/api/v1/runs/"+pull.ID+"/attempts/1/log", nil)
	if done.Status != "succeeded" || !strings.Contains(string(log), "staged 2 files") || !strings.Contains(string(log), "add     daily.py") {
		t.Fatalf("pull run %s:\n%s", done.Status, log)
	}
	var tasks httpapi.TaskList
	c.api("GET", "/api/v1/tasks?label=sub:repo", nil, 200, &tasks)
	if len(tasks.Items) != 2 {
		t.Fatalf("tasks made: %+v", tasks.Items)
	}

	// A pull cancelled while git waits on the network: the tree stays.
	os.WriteFile(filepath.Join(origin, "daily.py"), []byte("# cron: 31 7 * * *\nprint('two')\n"), 0o644)
	gitIn(t, origin, "commit", "--quiet", "-am", "two")
	slow = newGate()
	c.api("POST", "/api/v1/subscriptions/"+sub.ID+"/pull", nil, 201, &pull)
	c.waitRun(pull.ID, "to run", attemptRunning)
	c.api("POST", "/api/v1/runs/"+pull.ID+"/cancel", nil, 202, nil)
	done = c.waitRun(pull.ID, "to end", status("cancelled", "failed", "succeeded"))
	slow.release()
	if b, _ := os.ReadFile(filepath.Join(data, "scripts", "repo", "daily.py")); done.Status != "cancelled" || !strings.Contains(string(b), "30 7") {
		t.Fatalf("cancelled pull: %s, daily.py %q", done.Status, b)
	}

	// The dependency: an install cancelled mid-download, then one that completes.
	hold := newGate()
	reg := tinyRegistry(t, hold)
	c.api("PUT", "/api/v1/dependencies/settings/node", map[string]string{"kind": "node", "registry": reg.URL + "/", "proxy": ""}, 200, nil)
	var act httpapi.DependencyAction
	c.api("POST", "/api/v1/dependencies", map[string]string{"kind": "node", "name": "ql3-tiny"}, 201, &act)
	c.waitRun(act.Run.ID, "to run", attemptRunning)
	c.api("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/cancel", nil, 202, nil)
	c.waitRun(act.Run.ID, "to be cancelled", status("cancelled"))
	var list httpapi.DependencyList
	c.api("GET", "/api/v1/dependencies", nil, 200, &list)
	if len(list.Dependencies) != 1 || list.Dependencies[0].State != "cancelled" {
		t.Fatalf("after cancel: %+v", list.Dependencies)
	}
	hold.release()
	c.api("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/install", nil, 201, &act)
	done = c.waitRun(act.Run.ID, "to finish", status("succeeded", "failed", "cancelled", "timed_out"))
	if done.Status != "succeeded" {
		_, log := c.raw("GET", "/api/v1/runs/"+act.Run.ID+"/attempts/1/log", nil)
		t.Fatalf("install: %s\n%s", done.Status, log)
	}
	c.api("GET", "/api/v1/dependencies", nil, 200, &list)
	if list.Dependencies[0].State != "installed" {
		t.Fatalf("state %s", list.Dependencies[0].State)
	}
	// A python package from a local wheel folder: the venv's bin leads
	// every process's PATH, so a plain python3 imports it.
	wheels := filepath.Join(dir, "wheels")
	writeWheel(t, wheels)
	c.api("PUT", "/api/v1/dependencies/settings/python", map[string]string{"kind": "python", "registry": "file://" + wheels, "proxy": ""}, 200, nil)
	c.api("POST", "/api/v1/dependencies", map[string]string{"kind": "python", "name": "ql3tiny", "version": "1.0"}, 201, &act)
	if done := c.waitRun(act.Run.ID, "to finish", status("succeeded", "failed", "cancelled", "timed_out")); done.Status != "succeeded" {
		_, log := c.raw("GET", "/api/v1/runs/"+act.Run.ID+"/attempts/1/log", nil)
		t.Fatalf("python install: %s\n%s", done.Status, log)
	}
	py := c.createTask("import-it", shellSpec("python3 -c 'import ql3tiny; print(ql3tiny.hello())'", ""))
	var r httpapi.Run
	c.api("POST", "/api/v1/tasks/"+py.ID+"/runs", nil, 201, &r)
	done = c.waitRun(r.ID, "to finish", status("succeeded", "failed", "cancelled", "timed_out"))
	if _, log := c.raw("GET", "/api/v1/runs/"+r.ID+"/attempts/1/log", nil); done.Status != "succeeded" || strings.TrimSpace(string(log)) != "tiny py ok" {
		t.Fatalf("python3 importing the package: %s %q", done.Status, log)
	}

	for _, tk := range tasks.Items {
		if tk.Spec.Script == nil || tk.Spec.Script.File != "repo/use_tiny.js" {
			continue
		}
		var r httpapi.Run
		c.api("POST", "/api/v1/tasks/"+tk.ID+"/runs", nil, 201, &r)
		done := c.waitRun(r.ID, "to finish", status("succeeded", "failed", "cancelled", "timed_out"))
		_, log := c.raw("GET", "/api/v1/runs/"+r.ID+"/attempts/1/log", nil)
		if done.Status != "succeeded" || strings.TrimSpace(string(log)) != "tiny ok" {
			t.Fatalf("script requiring the package: %s %q", done.Status, log)
		}
		return
	}
	t.Fatal("no task for use_tiny.js")
}

// writeWheel writes a pure-Python wheel of module ql3tiny by hand.
func writeWheel(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	f, err := os.Create(filepath.Join(dir, "ql3tiny-1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	var record strings.Builder
	for _, fl := range [][2]string{
		{"ql3tiny/__init__.py", "def hello():\n    return 'tiny py ok'\n"},
		{"ql3tiny-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: ql3tiny\nVersion: 1.0\n"},
		{"ql3tiny-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: ql3-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	} {
		w, _ := z.Create(fl[0])
		w.Write([]byte(fl[1]))
		sum := sha256.Sum256([]byte(fl[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", fl[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(fl[1]))
	}
	record.WriteString("ql3tiny-1.0.dist-info/RECORD,,\n")
	w, _ := z.Create("ql3tiny-1.0.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
