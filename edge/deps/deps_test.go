package deps

import (
	"archive/zip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
)

// sh runs an action's line as the system task would (sh -c), with a
// private HOME and npm cache: nothing outside the test's folders is used.
func sh(t *testing.T, home, line string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "npm_config_cache=" + filepath.Join(home, "npm-cache"),
		"npm_config_update_notifier=false", "PIP_NO_CACHE_DIR=1"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// npmRegistry serves one package made by `npm pack`, as a registry does.
func npmRegistry(t *testing.T, home string) *httptest.Server {
	t.Helper()
	src := filepath.Join(home, "pkg")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "package.json"), []byte(`{"name":"ql3-tiny","version":"1.0.0","main":"index.js"}`), 0o644)
	os.WriteFile(filepath.Join(src, "index.js"), []byte(`module.exports = () => "tiny ok";`), 0o644)
	out, err := sh(t, home, "cd "+quote(src)+" && npm pack --silent")
	if err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	tgz, err := os.ReadFile(filepath.Join(src, strings.TrimSpace(out)))
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
			w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNodeDependencyFromALocalRegistry(t *testing.T) {
	home := t.TempDir()
	srv := npmRegistry(t, home)
	root := filepath.Join(home, "scripts")
	at := Places{ScriptsRoot: root}
	set := edge.DependencySettings{Kind: "node", Registry: srv.URL + "/"}
	d := edge.Dependency{Kind: "node", Name: "ql3-tiny", Version: "^1.0.0"}
	line, err := Command(d, edge.DepInstall, set, at, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := sh(t, home, line); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	// A script in a subscription's folder finds the package.
	os.MkdirAll(filepath.Join(root, "repo"), 0o755)
	os.WriteFile(filepath.Join(root, "repo", "use.js"), []byte(`console.log(require("ql3-tiny")());`), 0o644)
	if out, err := exec.Command("node", filepath.Join(root, "repo", "use.js")).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "tiny ok" {
		t.Fatalf("script requiring it: %v %s", err, out)
	}
	line, _ = Command(d, edge.DepRemove, set, at, nil)
	if out, err := sh(t, home, line); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "ql3-tiny")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("still installed: %v", err)
	}
}

// wheel writes a pure-Python wheel of module ql3tiny by hand.
func wheel(t *testing.T, dir string) {
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
		w.Write([]byte(fl[1]))
		sum := sha256Digest(fl[1])
		record.WriteString(fl[0] + ",sha256=" + sum + "," + itoa(len(fl[1])) + "\n")
	}
	record.WriteString("ql3tiny-1.0.dist-info/RECORD,,\n")
	w, _ := z.Create("ql3tiny-1.0.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestPythonDependencyFromALocalWheelDir(t *testing.T) {
	home := t.TempDir()
	wheels := filepath.Join(home, "wheels")
	os.MkdirAll(wheels, 0o755)
	wheel(t, wheels)
	venv := filepath.Join(home, "deps", "python")
	at := Places{PythonVenv: venv}
	set := edge.DependencySettings{Kind: "python", Registry: "file://" + wheels}
	d := edge.Dependency{Kind: "python", Name: "ql3tiny", Version: "1.0"}
	line, err := Command(d, edge.DepInstall, set, at, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "--no-index --find-links '"+wheels+"'") || !strings.Contains(line, "'ql3tiny==1.0'") {
		t.Fatalf("line %q", line)
	}
	if out, err := sh(t, home, line); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	// A script run by the python3 the PATH finds first (the venv's bin
	// leads the PATH of every process the edge starts) imports it.
	script := filepath.Join(home, "use.py")
	os.WriteFile(script, []byte("import ql3tiny\nprint(ql3tiny.hello())\n"), 0o644)
	run := exec.Command("/bin/sh", "-c", "python3 "+quote(script))
	run.Env = []string{"PATH=" + filepath.Join(venv, "bin") + ":" + os.Getenv("PATH")}
	if out, err := run.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "tiny py ok" {
		t.Fatalf("script importing it: %v %s", err, out)
	}
	line, _ = Command(d, edge.DepRemove, set, at, nil)
	if out, err := sh(t, home, line); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	run = exec.Command("/bin/sh", "-c", "python3 "+quote(script))
	run.Env = []string{"PATH=" + filepath.Join(venv, "bin") + ":" + os.Getenv("PATH")}
	if out, err := run.CombinedOutput(); err == nil {
		t.Fatalf("still importable after remove: %s", out)
	}
}

func TestLinuxDependencies(t *testing.T) {
	d := edge.Dependency{Kind: "linux", Name: "curl", Version: "8.5.0-r0"}
	if _, err := Command(d, edge.DepInstall, edge.DependencySettings{}, Places{}, nil); errs.Code(err) != errs.Unavailable ||
		!strings.Contains(err.Error(), "apk, opkg, apt-get") {
		t.Fatalf("no package manager: %v", err)
	}
	for _, tc := range []struct {
		have, want string
	}{{"apk", "apk add --no-cache 'curl=8.5.0-r0'"}, {"apt-get", "apt-get install -y -q 'curl=8.5.0-r0'"}} {
		pm, ok := FindPackageManager(func(n string) (string, error) {
			if n == tc.have {
				return "/sbin/" + n, nil
			}
			return "", exec.ErrNotFound
		})
		if !ok || pm.Name != tc.have {
			t.Fatalf("found %+v", pm)
		}
		line, err := Command(d, edge.DepInstall, edge.DependencySettings{Proxy: "http://proxy:3128"}, Places{}, &pm)
		if err != nil || !strings.Contains(line, tc.want) || !strings.Contains(line, "HTTPS_PROXY='http://proxy:3128'") {
			t.Errorf("%s: %q %v", tc.have, line, err)
		}
	}
	opkg := managers[1]
	if _, err := Command(d, edge.DepInstall, edge.DependencySettings{}, Places{}, &opkg); errs.Field(err) != "version" {
		t.Errorf("opkg with a version: %v", err)
	}
}
