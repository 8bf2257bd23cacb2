package app

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func newTestMain(env map[string]string) (*Main, *bytes.Buffer) {
	m := NewMain()
	var stderr bytes.Buffer
	m.Stderr, m.Stdout, m.Getenv = &stderr, &bytes.Buffer{}, envMap(env)
	return m, &stderr
}

func TestParseFlagsPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "ql3.json")
	if err := os.WriteFile(cfgPath, []byte(`{"listen":"127.0.0.1:6000","dataDir":"/from/file","maxConcurrency":8,"logLevel":"warn"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want func(Config) bool
	}{
		{"defaults", nil, nil, func(c Config) bool {
			return c.Listen == DefaultListen && c.DataDir == DefaultDataDir && c.MisfireGraceMs == 30_000 && !c.NoAuth
		}},
		{"file", map[string]string{"QL3_CONFIG": cfgPath}, nil, func(c Config) bool {
			return c.Listen == "127.0.0.1:6000" && c.DataDir == "/from/file" && c.MaxConcurrency == 8 && c.LogLevel == "warn"
		}},
		{"env beats file", map[string]string{"QL3_CONFIG": cfgPath, "QL3_DATA_DIR": "/from/env", "QL3_MAX_CONCURRENCY": "2"}, nil, func(c Config) bool {
			return c.Listen == "127.0.0.1:6000" && c.DataDir == "/from/env" && c.MaxConcurrency == 2
		}},
		{"flags beat env", map[string]string{"QL3_DATA_DIR": "/from/env", "QL3_LISTEN": "127.0.0.1:1"},
			[]string{"--config", cfgPath, "--data-dir", "/from/flag", "--misfire-grace", "2m", "--no-auth", "--log-retention", "48h"}, func(c Config) bool {
				return c.Listen == "127.0.0.1:1" && c.DataDir == "/from/flag" && c.MisfireGraceMs == 120_000 && c.NoAuth && c.LogRetentionHours == 48
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMain(tc.env)
			if err := m.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if !tc.want(m.Config) {
				t.Errorf("config = %+v", m.Config)
			}
		})
	}
}

func TestParseFlagsRejects(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"listen":"x","tokenn":"y"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		env   map[string]string
		args  []string
		field string
	}{
		{"grace above max", nil, []string{"--misfire-grace", "6m"}, "misfireGraceMs"},
		{"concurrency zero", nil, []string{"--max-concurrency", "0"}, "maxConcurrency"},
		{"log level", nil, []string{"--log-level", "loud"}, "logLevel"},
		{"log format", nil, []string{"--log-format", "xml"}, "logFormat"},
		{"log format env", map[string]string{"QL3_LOG_FORMAT": "yaml"}, nil, "logFormat"},
		{"bad env int", map[string]string{"QL3_MAX_CONCURRENCY": "many"}, nil, "QL3_MAX_CONCURRENCY"},
		{"bad env bool", map[string]string{"QL3_NO_AUTH": "perhaps"}, nil, "QL3_NO_AUTH"},
		{"unknown config field", nil, []string{"--config", bad}, "tokenn"},
		{"missing config", nil, []string{"--config", filepath.Join(dir, "none.json")}, "config"},
		{"log max tiny", nil, []string{"--log-max-bytes", "10"}, "logMaxBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMain(tc.env)
			err := m.ParseFlags(tc.args)
			if err == nil {
				t.Fatalf("accepted; config %+v", m.Config)
			}
			if errs.Field(err) != tc.field {
				t.Errorf("field %q, want %q (%v)", errs.Field(err), tc.field, err)
			}
		})
	}
	m, _ := newTestMain(nil)
	if err := m.ParseFlags([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if err := m.ParseFlags([]string{"extra"}); err == nil {
		t.Error("a positional argument was accepted")
	}
	if err := m.ParseFlags([]string{"--kill-grace", "-1s"}); err == nil {
		t.Error("a negative duration was accepted")
	}
}

func TestDecodeConfigStrict(t *testing.T) {
	for _, in := range []string{`{"addr":"x","addr":"y"}`, `{"noAuth":"yes"}`, `[]`, `{"listen":"a"} {}`, `{"nested":{"a":1}}`} {
		if _, err := DecodeConfig([]byte(in)); err == nil {
			t.Errorf("DecodeConfig(%s) accepted", in)
		}
	}
	c, err := DecodeConfig([]byte(`{"addr":"127.0.0.1:9","tokenFile":"/t"}`))
	if err != nil || c.Addr != "127.0.0.1:9" || c.TokenFile != "/t" {
		t.Errorf("DecodeConfig = %+v, %v", c, err)
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"listen":"127.0.0.1:5700","dataDir":"./data","maxConcurrency":4}`))
	f.Add([]byte(`{"noAuth":true,"logLevel":"debug"}`))
	f.Add([]byte(`{"misfireGraceMs":-1}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeConfig(data)
		if err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		// Whatever decodes must survive validation without panicking and
		// overlay onto the defaults deterministically.
		base := DefaultConfig()
		base.overlay(c)
		_ = base.ValidateServer()
	})
}
