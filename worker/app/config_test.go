package app

import (
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func base() Config {
	c := DefaultConfig()
	c.IngressURL = "https://127.0.0.1:5801"
	c.CredentialFile, c.CertFile, c.KeyFile, c.CAFile = "/i/c", "/i/cert", "/i/key", "/i/ca"
	return c
}

func TestProfiles(t *testing.T) {
	c := base()
	s, err := c.Validate()
	if err != nil || s.Agent.Capacity != 1 || s.Agent.Cadence != 2*time.Second || s.Agent.LogBytes != 4<<20 {
		t.Fatalf("router: %+v %v", s.Agent, err)
	}
	c.Profile = "node"
	s, err = c.Validate()
	if err != nil || s.Agent.Capacity != 8 || s.Agent.Cadence != 500*time.Millisecond || s.Agent.LogBytes != 64<<20 {
		t.Fatalf("node: %+v %v", s.Agent, err)
	}
	c.Capacity = 3
	if s, _ = c.Validate(); s.Agent.Capacity != 3 {
		t.Fatalf("capacity override: %d", s.Agent.Capacity)
	}
}

func TestPrecedenceFileEnvFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.json")
	if err := os.WriteFile(path, []byte(`{"profile":"node","drainGraceMs":5000,"labels":{"zone":"a"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := base()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	apply := c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--drain-grace-ms", "7000"}); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"QL3_DRAIN_GRACE_MS": "6000", "QL3_LABELS": "zone=b,tier=edge"}
	if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.DrainGraceMs != 6000 || c.Labels["zone"] != "b" || c.Profile != "node" {
		t.Fatalf("after env: %+v", c)
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	if c.DrainGraceMs != 7000 {
		t.Fatalf("flag did not win: %d", c.DrainGraceMs)
	}
}

func TestConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.json")
	_ = os.WriteFile(path, []byte(`{"profil":"node"}`), 0o600)
	c := base()
	if err := c.LoadFile(path); err == nil || !strings.Contains(err.Error(), "profil") {
		t.Fatalf("unknown field: %v", err)
	}
	_ = os.WriteFile(path, []byte(`{"profile":"node","Profile":"router"}`), 0o600)
	if err := c.LoadFile(path); err == nil {
		t.Fatal("duplicate keys accepted")
	}
	for name, mut := range map[string]func(*Config){
		"profile":          func(c *Config) { c.Profile = "desktop" },
		"ingressUrl":       func(c *Config) { c.IngressURL = "" },
		"stateDir":         func(c *Config) { c.StateDir = "relative" },
		"heartbeatMs":      func(c *Config) { c.HeartbeatMs = 10 },
		"requestTimeoutMs": func(c *Config) { c.RequestTimeoutMs = 61_000 },
		"inboxMax":         func(c *Config) { c.InboxMax = 2000 },
		"logLevel":         func(c *Config) { c.LogLevel = "loud" },
		"logFormat":        func(c *Config) { c.LogFormat = "xml" },
		// A kill grace or fence margin that leaves the 45 s attempt lease
		// no room for a 10 s heartbeat (core/lease): every running attempt
		// would be stopped before its renewal.
		"killGraceMs 31000":   func(c *Config) { c.KillGraceMs = 31_000 },
		"fenceMarginMs 30000": func(c *Config) { c.FenceMarginMs = 30_000 },
	} {
		c := base()
		mut(&c)
		if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	bad := base()
	if err := bad.ApplyEnv(func(k string) string {
		if k == "QL3_CAPACITY" {
			return "many"
		}
		return ""
	}); err == nil || !strings.Contains(err.Error(), "QL3_CAPACITY") {
		t.Fatalf("bad env: %v", err)
	}
}

func TestMainUsageErrors(t *testing.T) {
	var out strings.Builder
	if code := Main("test", []string{"--profile", "desktop", "--ingress-url", "https://h:1",
		"--credential-file", "/a", "--cert-file", "/b", "--key-file", "/c", "--ca-file", "/d"}, func(string) string { return "" }, &out); code != ExitUsage {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if !strings.Contains(out.String(), "profile") {
		t.Fatalf("message: %s", out.String())
	}
}

func TestLogFormatJSON(t *testing.T) {
	var b strings.Builder
	newLogger(&b, slog.LevelInfo, "json").Info("hello", "k", "v")
	if !strings.HasPrefix(b.String(), `{"time":`) || !strings.Contains(b.String(), `"msg":"hello","k":"v"}`) {
		t.Errorf("json line: %q", b.String())
	}
	b.Reset()
	newLogger(&b, slog.LevelInfo, "text").Info("hello")
	if !strings.Contains(b.String(), "msg=hello") {
		t.Errorf("text line: %q", b.String())
	}
}

// --interpreter (repeatable), QL3_INTERPRETERS and the config file's
// interpreters override an extension's interpreter as the edge's do; the
// flag wins; a malformed one is refused at start naming the field.
func TestInterpreterOverrides(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.json")
	if err := os.WriteFile(path, []byte(`{"interpreters":".py=/file/python3"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := base()
	if err := c.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	s, err := c.Validate()
	if err != nil || s.Agent.Interpreters[".py"][0] != "/file/python3" || s.Agent.Interpreters[".js"][0] != "node" {
		t.Fatalf("file: %v %v", s.Agent.Interpreters, err)
	}
	if err := c.ApplyEnv(func(k string) string {
		if k == "QL3_INTERPRETERS" {
			return ".py=/env/python3,.ts=tsx"
		}
		return ""
	}); err != nil {
		t.Fatal(err)
	}
	if s, err = c.Validate(); err != nil || s.Agent.Interpreters[".py"][0] != "/env/python3" || len(s.Agent.Interpreters[".ts"]) != 1 {
		t.Fatalf("env: %v %v", s.Agent.Interpreters, err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	apply := c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--interpreter", ".py=/opt/py/bin/python3", "--interpreter", ".rb=ruby"}); err != nil {
		t.Fatal(err)
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	if s, err = c.Validate(); err != nil || s.Agent.Interpreters[".py"][0] != "/opt/py/bin/python3" || s.Agent.Interpreters[".rb"][0] != "ruby" {
		t.Fatalf("flags: %v %v", s.Agent.Interpreters, err)
	}
	for _, bad := range []string{".py", "py=/x", ".py="} {
		c := base()
		c.Interpreters = bad
		if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), "interpreters") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
