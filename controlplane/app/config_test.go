package app

import (
	"errors"
	"flag"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/core/errs"
)

func parse(t *testing.T, env map[string]string, args ...string) (*Main, error) {
	t.Helper()
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	return m, m.ParseFlags(args)
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ql3.json")
	if err := os.WriteFile(file, []byte(`{"listen":":7000","maxConns":3,"logLevel":"debug","server":"http://file:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"QL3_CONFIG": file, "QL3_MAX_CONNS": "5", "QL3_SERVER": "http://env:2"}
	m, err := parse(t, env, "serve", "--max-conns", "6")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	if c.Listen != ":7000" || c.MaxConns != 6 || c.LogLevel != "debug" || c.Server != "http://env:2" || c.DefaultGraceMs != publication.PublishDefaultGraceMs {
		t.Fatalf("config = %+v: want file < env < flag over defaults", c)
	}
	if m, err = parse(t, nil, "serve"); err != nil || m.Config != DefaultConfig() {
		t.Fatalf("defaults: %+v, %v", m.Config, err)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"listen":":1","Listen":":2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.json")
	if err := os.WriteFile(unknown, []byte(`{"listen":":1","password":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want func(error) bool
	}{
		{"no command", nil, nil, func(err error) bool { return errors.Is(err, ErrUsage) }},
		{"unknown command", nil, []string{"frobnicate"}, func(err error) bool { return errors.Is(err, ErrUsage) }},
		{"help", nil, []string{"help"}, func(err error) bool { return errors.Is(err, flag.ErrHelp) }},
		{"unknown flag", nil, []string{"serve", "--colour"}, func(err error) bool { return errors.Is(err, ErrUsage) }},
		{"stray argument", nil, []string{"migrate", "now"}, func(err error) bool { return errors.Is(err, ErrUsage) }},
		{"bad env int", map[string]string{"QL3_MAX_CONNS": "many"}, []string{"serve"}, func(err error) bool { return errs.Field(err) == "QL3_MAX_CONNS" }},
		{"bad flag bool", nil, []string{"serve", "--require-tls=maybe"}, func(err error) bool { return errs.Field(err) == "--require-tls" }},
		{"duplicate key in file", nil, []string{"serve", "--config", bad}, func(err error) bool { return errs.Code(err) == errs.Invalid }},
		{"unknown key in file", nil, []string{"serve", "--config", unknown}, func(err error) bool { return errs.Field(err) == "password" }},
		{"missing file", nil, []string{"serve", "--config", filepath.Join(dir, "none.json")}, func(err error) bool { return errors.Is(err, os.ErrNotExist) }},
	}
	for _, tc := range cases {
		_, err := parse(t, tc.env, tc.args...)
		if err == nil || !tc.want(err) {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
}

func TestValidateServe(t *testing.T) {
	base := DefaultConfig()
	base.DSN = "host=/tmp dbname=ql3"
	cases := []struct {
		name  string
		mut   func(*Config)
		field string
	}{
		{"ok", func(*Config) {}, ""},
		{"no dsn", func(c *Config) { c.DSN = "" }, "dsn"},
		{"require tls without cert", func(c *Config) { c.RequireTLS = true }, "require-tls"},
		{"cert without key", func(c *Config) { c.TLSCert = "c.pem" }, "tls-key"},
		{"grace too long", func(c *Config) { c.DefaultGraceMs = 300_001 }, "default-grace-ms"},
		{"no conns", func(c *Config) { c.MaxConns = 0 }, "max-conns"},
		{"budget 0", func(c *Config) { c.SchedulerBudget = 0 }, "scheduler-budget"},
		{"budget above the hard limit", func(c *Config) { c.SchedulerBudget = 257 }, "scheduler-budget"},
		{"lease too short", func(c *Config) { c.SchedulerLeaseMs = 999 }, "scheduler-lease-ms"},
		{"lease too long", func(c *Config) { c.SchedulerLeaseMs = 60_001 }, "scheduler-lease-ms"},
		{"budget 256, lease 60 s", func(c *Config) { c.SchedulerBudget, c.SchedulerLeaseMs = 256, 60_000 }, ""},
	}
	for _, tc := range cases {
		c := base
		tc.mut(&c)
		err := c.validateServe()
		if errs.Field(err) != tc.field || (tc.field == "") != (err == nil) {
			t.Errorf("%s: %v, want field %q", tc.name, err, tc.field)
		}
	}
}

func TestRoleDSN(t *testing.T) {
	c := Config{DSN: "postgres://ql3:secret@db:5432/ql3?sslmode=require&options=-c%20statement_timeout%3D5s"}
	got, err := c.roleDSN(postgres.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil || u.Query().Get("options") != "-c statement_timeout=5s -c role=ql3_runtime" || u.Query().Get("sslmode") != "require" ||
		strings.Contains(u.RawQuery, "+") {
		t.Fatalf("URL DSN with role = %q", got)
	}
	c = Config{DSN: "host=/run/pg dbname=ql3", AdminDSN: "host=/run/pg user=ql3_admin"}
	if got, _ := c.roleDSN(postgres.RoleAdmin); got != c.AdminDSN {
		t.Fatalf("own DSN must win: %q", got)
	}
	if got, _ := c.roleDSN(postgres.RoleWorkerIngress); got != "host=/run/pg dbname=ql3 options='-c role=ql3_worker_ingress'" {
		t.Fatalf("keyword DSN with role = %q", got)
	}
	c = Config{DSN: "host=/run/pg options='-c x=y'"}
	if _, err := c.roleDSN(postgres.RoleAdmin); errs.Field(err) != "dsn" {
		t.Fatalf("keyword DSN with options: %v", err)
	}
	if _, err := (Config{}).roleDSN(postgres.RoleAdmin); errs.Field(err) != "dsn" {
		t.Fatalf("no DSN: %v", err)
	}
	if _, err := (Config{DSN: "postgres://u:hunter2@h:bad/x"}).roleDSN(postgres.RoleAdmin); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad URL: %v (must not echo the password)", err)
	}
}

// FuzzDecodeConfig: the config file decoder never panics, and whatever it
// accepts survives a round trip through the settings' environment names.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"listen":":5800","maxConns":4,"requireTls":true}`))
	f.Add([]byte(`{"dsn":"host=/tmp","logLevel":"debug"}`))
	f.Add([]byte(`{"listen":1}`))
	f.Add([]byte(`{"listen":":1","listen":":2"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := DefaultConfig()
		if err := DecodeConfig(data, &c); err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		for _, s := range c.settings() {
			if !strings.HasPrefix(s.env(), "QL3_") {
				t.Fatalf("setting %s has env %s", s.flag, s.env())
			}
		}
	})
}

// TestSweepSettings: the sweeper's settings have defaults, reach the
// coordinator's options, and bad values name their flag.
func TestSweepSettings(t *testing.T) {
	c := DefaultConfig()
	o := c.SweepOptions()
	if err := o.Validate(); err != nil || o.CancelGrace != 10*time.Second || o.RunRetention != 30*24*time.Hour {
		t.Fatalf("defaults %+v %v", o, err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"grace 0", func(c *Config) { c.CancelGraceMs = 0 }, "cancel-grace-ms"},
		{"grace above 5 min", func(c *Config) { c.CancelGraceMs = 300_001 }, "cancel-grace-ms"},
		{"log retention 0", func(c *Config) { c.LogRetentionHours = 0 }, "log-retention-hours"},
		{"run retention beyond 10 years", func(c *Config) { c.RunRetentionHours = 87_601 }, "run-retention-hours"},
		{"logs kept longer than runs", func(c *Config) { c.LogRetentionHours = c.RunRetentionHours + 1 }, "log-retention-hours"},
		{"audit retention 0", func(c *Config) { c.AuditRetentionHours = 0 }, "audit-retention-hours"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.validateSweep(); errs.Field(err) != tc.field {
			t.Errorf("%s: %v, want field %s", tc.name, err, tc.field)
		}
	}
}

// TestPullPacingSettings: the pacing of empty pulls has defaults that reach
// the pacer, and bad values name their flag (ADR 0030).
func TestPullPacingSettings(t *testing.T) {
	c := DefaultConfig()
	if err := c.validateIngress(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	if o := c.PullPacerOptions(); o.Margin != pullpace.DefaultPullMargin || o.Floor != pullpace.DefaultPullFloor {
		t.Fatalf("defaults %+v", o)
	}
	c.PullMarginMs = 0
	if o := c.PullPacerOptions(); o.Margin != time.Millisecond {
		t.Errorf("a configured 0 margin became %s, want the smallest (1 ms), not the default", o.Margin)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"negative margin", func(c *Config) { c.PullMarginMs = -1 }, "pull-margin-ms"},
		{"margin above 10 s", func(c *Config) { c.PullMarginMs = 10_001 }, "pull-margin-ms"},
		{"floor below 100 ms", func(c *Config) { c.PullFloorMs = 99 }, "pull-floor-ms"},
		{"floor above 60 s", func(c *Config) { c.PullFloorMs = 60_001 }, "pull-floor-ms"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.validateIngress(); errs.Field(err) != tc.field {
			t.Errorf("%s: %v, want field %s", tc.name, err, tc.field)
		}
	}
}

// TestHeartbeatPastTheWorkersGiveUpPointRefusedAtStart: a worker stops a
// running attempt on its own at attempt lease − fence margin − kill grace
// (45 − 5 − 10 = 30 s) after its last renewal, and renewals ride the
// heartbeat: a 40 s heartbeat would kill every running attempt before its
// first renewal. serve refuses it before it touches anything, naming both
// values; a heartbeat under the give-up point still starts.
func TestHeartbeatPastTheWorkersGiveUpPointRefusedAtStart(t *testing.T) {
	m, err := parse(t, nil, "serve", "--dsn", "host=/nonexistent dbname=ql3",
		"--session-heartbeat-ms", "40000", "--session-lease-ms", "90000")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	err = m.Run(t.Context())
	if errs.Code(err) != errs.Invalid || errs.Field(err) != "session-heartbeat-ms" {
		t.Fatalf("serve with a 40 s heartbeat: %v, want invalid session-heartbeat-ms", err)
	}
	for _, want := range []string{"40000", "30000", "45000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if m.Serving() {
		t.Fatal("serve started")
	}
	c := DefaultConfig()
	c.DSN = "host=/tmp dbname=ql3"
	c.SessionHeartbeatMs, c.SessionLeaseMs = 29_000, 90_000
	if err := c.validateServe(); err != nil {
		t.Fatalf("a 29 s heartbeat (under the 30 s give-up point): %v", err)
	}
	if p := c.Lease(); p.HeartbeatMs != 29_000 || p.SessionMs != 90_000 || p.StartedMs != 45_000 || p.ClaimMs != c.SchedulerLeaseMs {
		t.Fatalf("Lease() = %+v, want the configured heartbeat and session lease", p)
	}
}
