package depcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		d     Dependency
		field string // "" = valid
	}{
		{Dependency{Kind: Node, Name: "axios"}, ""},
		{Dependency{Kind: Node, Name: "@scope/pkg", Version: "^1.2.3"}, ""},
		{Dependency{Kind: Python, Name: "requests[socks]", Version: ">=2.0"}, ""},
		{Dependency{Kind: Linux, Name: "py3-pip", Version: "23.1-r0"}, ""},
		{Dependency{Kind: "ruby", Name: "x"}, "kind"},
		{Dependency{Kind: Node, Name: "Axios"}, "name"},
		{Dependency{Kind: Node, Name: "a;rm -rf /"}, "name"},
		{Dependency{Kind: Python, Name: "-e"}, "name"},
		{Dependency{Kind: Linux, Name: "curl", Version: "-1"}, "version"},
		{Dependency{Kind: Linux, Name: "curl", Version: "1 2"}, "version"},
		{Dependency{Kind: Node, Name: "x", Version: "$(id)"}, "version"},
	} {
		_, err := Check(tc.d)
		if got := errs.Field(err); got != tc.field || (tc.field == "") != (err == nil) {
			t.Errorf("%+v: %v (field %q, want %q)", tc.d, err, got, tc.field)
		}
	}
	if err := CheckAction("purge"); errs.Field(err) != "action" {
		t.Errorf("action: %v", err)
	}
	if _, err := CheckSettings(Settings{Kind: Node, Registry: "ftp://x"}); errs.Field(err) != "registry" {
		t.Errorf("registry: %v", err)
	}
	if _, err := CheckSettings(Settings{Kind: Python, Proxy: "http://u:pw@proxy"}); errs.Field(err) != "proxy" {
		t.Errorf("proxy: %v", err)
	}
}

func FuzzCheckQuotedLine(f *testing.F) {
	for _, s := range []string{"axios", "a'b", "x;y", "$(id)", "1.0"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, name, version string) {
		for _, kind := range []string{Node, Python, Linux} {
			d, err := Check(Dependency{Kind: kind, Name: name, Version: version})
			if err != nil {
				continue
			}
			for _, s := range []string{d.Name, d.Version} {
				if strings.ContainsAny(s, " \t\r\n'\"$`;|&()\\{}") || strings.HasPrefix(s, "-") {
					t.Fatalf("%s accepted %q: a word break or an option", kind, s)
				}
			}
		}
	})
}

// The cluster's lines are relative to $QL3_DEPS_DIR, and a linux line
// picks the manager where it runs.
func TestWorkerCommand(t *testing.T) {
	line, err := WorkerCommand(Dependency{Kind: Node, Name: "ql3-tiny"}, Install, Settings{Registry: "http://r/"})
	if err != nil || !strings.Contains(line, `npm --prefix "$QL3_DEPS_DIR"/'node'`) || !strings.Contains(line, "--registry 'http://r/'") {
		t.Fatalf("node: %v %q", err, line)
	}
	line, err = WorkerCommand(Dependency{Kind: Python, Name: "ql3tiny"}, Remove, Settings{})
	if err != nil || !strings.Contains(line, `"$QL3_DEPS_DIR"/'python/bin/python3' -m pip --disable-pip-version-check --no-input uninstall -y 'ql3tiny'`) {
		t.Fatalf("python: %v %q", err, line)
	}
	if _, err := WorkerCommand(Dependency{Kind: Node, Name: "x"}, "purge", Settings{}); errs.Field(err) != "action" {
		t.Fatalf("action: %v", err)
	}
	// Run the linux line with a PATH holding only a fake opkg (no
	// version support) and then none at all.
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "opkg"), []byte("#!/bin/sh\necho opkg \"$@\"\n"), 0o755)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(d Dependency, path string) (string, error) {
		line, err := WorkerCommand(d, Install, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(sh, "-c", line)
		c.Env = []string{"PATH=" + path}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := run(Dependency{Kind: Linux, Name: "curl"}, bin); err != nil || strings.TrimSpace(out) != "opkg install curl" {
		t.Fatalf("opkg: %v %q", err, out)
	}
	if out, err := run(Dependency{Kind: Linux, Name: "curl", Version: "8.5"}, bin); err == nil || !strings.Contains(out, "opkg installs no chosen version") {
		t.Fatalf("opkg with a version: %v %q", err, out)
	}
	if out, err := run(Dependency{Kind: Linux, Name: "curl"}, filepath.Join(dir, "none")); err == nil || !strings.Contains(out, "apk, opkg, apt-get") {
		t.Fatalf("no manager: %v %q", err, out)
	}
}
