// Package app wires ql3-worker: configuration (defaults < JSON config file
// < QL3_* environment < flags), logging, identity, journal, executor,
// capabilities, the ingress client and the agent, and the signals.
package app

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

const maxConfigFileBytes = 64 << 10

// Config is everything ql3-worker reads. Zero means "the profile's
// default" for the numbers.
type Config struct {
	IngressURL     string `json:"ingressUrl,omitempty"`     // QL3_INGRESS_URL: https://host:5801
	ServerName     string `json:"serverName,omitempty"`     // QL3_SERVER_NAME: TLS name when it differs from the host
	CredentialFile string `json:"credentialFile,omitempty"` // QL3_CREDENTIAL_FILE
	CertFile       string `json:"certFile,omitempty"`       // QL3_CERT_FILE
	KeyFile        string `json:"keyFile,omitempty"`        // QL3_KEY_FILE
	CAFile         string `json:"caFile,omitempty"`         // QL3_CA_FILE
	StateDir       string `json:"stateDir,omitempty"`       // QL3_STATE_DIR
	WorkDir        string `json:"workDir,omitempty"`        // QL3_WORK_DIR; default <stateDir>/work
	Profile        string `json:"profile,omitempty"`        // QL3_PROFILE: router | node

	Capacity         int   `json:"capacity,omitempty"`         // QL3_CAPACITY
	CadenceMs        int64 `json:"cadenceMs,omitempty"`        // QL3_CADENCE_MS
	LogMaxBytes      int64 `json:"logMaxBytes,omitempty"`      // QL3_LOG_MAX_BYTES: spool per attempt
	InboxMax         int   `json:"inboxMax,omitempty"`         // QL3_INBOX_MAX
	HeartbeatMs      int64 `json:"heartbeatMs,omitempty"`      // QL3_HEARTBEAT_MS: until the authority names one
	DrainGraceMs     int64 `json:"drainGraceMs,omitempty"`     // QL3_DRAIN_GRACE_MS
	KillGraceMs      int64 `json:"killGraceMs,omitempty"`      // QL3_KILL_GRACE_MS
	FenceMarginMs    int64 `json:"fenceMarginMs,omitempty"`    // QL3_FENCE_MARGIN_MS
	RequestTimeoutMs int64 `json:"requestTimeoutMs,omitempty"` // QL3_REQUEST_TIMEOUT_MS

	Labels   map[string]string `json:"labels,omitempty"`   // QL3_LABELS: k=v,k=v
	LogLevel string            `json:"logLevel,omitempty"` // QL3_LOG_LEVEL
	// LogFormat is text (default) or json: one slog record per line.
	LogFormat string `json:"logFormat,omitempty"` // QL3_LOG_FORMAT
	// Interpreters overrides the script interpreter of an extension, as
	// the edge's: ".py=/opt/py/bin/python3,.ts=tsx" (the repeatable
	// --interpreter flag).
	Interpreters string `json:"interpreters,omitempty"` // QL3_INTERPRETERS
}

// DefaultConfig is the router profile with a state dir under /var/lib.
func DefaultConfig() Config {
	return Config{StateDir: "/var/lib/ql3-worker", Profile: "router", LogLevel: "info", LogFormat: "text"}
}

// LoadFile overlays a strict JSON config file (unknown fields refused).
func (c *Config) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: reading the config file: %w", err)
	}
	if len(data) > maxConfigFileBytes {
		return fmt.Errorf("config: file is %d bytes, limit is %d", len(data), maxConfigFileBytes)
	}
	var f Config
	// Strict like the other binaries' config files: unknown or duplicate
	// keys (case-insensitively) and trailing data are refused by name.
	lim := canonjson.Limits{MaxBytes: maxConfigFileBytes, MaxDepth: 2, MaxEntries: 64, MaxString: 4096}
	if err := canonjson.DecodeStrict(data, lim, &f); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	c.overlay(f)
	return nil
}

func (c *Config) overlay(o Config) {
	for _, s := range []struct {
		dst *string
		v   string
	}{
		{&c.IngressURL, o.IngressURL}, {&c.ServerName, o.ServerName}, {&c.CredentialFile, o.CredentialFile},
		{&c.CertFile, o.CertFile}, {&c.KeyFile, o.KeyFile}, {&c.CAFile, o.CAFile},
		{&c.StateDir, o.StateDir}, {&c.WorkDir, o.WorkDir}, {&c.Profile, o.Profile}, {&c.LogLevel, o.LogLevel}, {&c.LogFormat, o.LogFormat},
		{&c.Interpreters, o.Interpreters},
	} {
		if s.v != "" {
			*s.dst = s.v
		}
	}
	for _, n := range []struct {
		dst *int64
		v   int64
	}{
		{&c.CadenceMs, o.CadenceMs}, {&c.LogMaxBytes, o.LogMaxBytes}, {&c.HeartbeatMs, o.HeartbeatMs},
		{&c.DrainGraceMs, o.DrainGraceMs}, {&c.KillGraceMs, o.KillGraceMs}, {&c.FenceMarginMs, o.FenceMarginMs},
		{&c.RequestTimeoutMs, o.RequestTimeoutMs},
	} {
		if n.v != 0 {
			*n.dst = n.v
		}
	}
	if o.Capacity != 0 {
		c.Capacity = o.Capacity
	}
	if o.InboxMax != 0 {
		c.InboxMax = o.InboxMax
	}
	if o.Labels != nil {
		c.Labels = o.Labels
	}
}

// envNames maps QL3_* variables to config fields (flags use the same
// names in kebab case).
func (c *Config) strings() map[string]*string {
	return map[string]*string{
		"QL3_INGRESS_URL": &c.IngressURL, "QL3_SERVER_NAME": &c.ServerName,
		"QL3_CREDENTIAL_FILE": &c.CredentialFile, "QL3_CERT_FILE": &c.CertFile, "QL3_KEY_FILE": &c.KeyFile,
		"QL3_CA_FILE": &c.CAFile, "QL3_STATE_DIR": &c.StateDir, "QL3_WORK_DIR": &c.WorkDir,
		"QL3_PROFILE": &c.Profile, "QL3_LOG_LEVEL": &c.LogLevel, "QL3_LOG_FORMAT": &c.LogFormat,
	}
}

func (c *Config) ints() map[string]*int64 {
	return map[string]*int64{
		"QL3_CADENCE_MS": &c.CadenceMs, "QL3_LOG_MAX_BYTES": &c.LogMaxBytes, "QL3_HEARTBEAT_MS": &c.HeartbeatMs,
		"QL3_DRAIN_GRACE_MS": &c.DrainGraceMs, "QL3_KILL_GRACE_MS": &c.KillGraceMs,
		"QL3_FENCE_MARGIN_MS": &c.FenceMarginMs, "QL3_REQUEST_TIMEOUT_MS": &c.RequestTimeoutMs,
	}
}

// ApplyEnv overlays QL3_* variables.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	for k, dst := range c.strings() {
		if v := getenv(k); v != "" {
			*dst = v
		}
	}
	for k, dst := range c.ints() {
		if v := getenv(k); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: expected an integer, got %q", k, v)
			}
			*dst = n
		}
	}
	for k, dst := range map[string]*int{"QL3_CAPACITY": &c.Capacity, "QL3_INBOX_MAX": &c.InboxMax} {
		if v := getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: expected an integer, got %q", k, v)
			}
			*dst = n
		}
	}
	if v := getenv("QL3_INTERPRETERS"); v != "" {
		c.Interpreters = v
	}
	if v := getenv("QL3_LABELS"); v != "" {
		labels, err := parseLabels(v)
		if err != nil {
			return fmt.Errorf("QL3_LABELS: %w", err)
		}
		c.Labels = labels
	}
	return nil
}

func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("want k=v,k=v, got %q", kv)
		}
		out[k] = v
	}
	return out, nil
}

// flagName turns QL3_INGRESS_URL into ingress-url.
func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "QL3_")), "_", "-")
}

// RegisterFlags binds every setting to fs; flags win over env and file.
// Parsed values are written back by the returned apply func.
func (c *Config) RegisterFlags(fs *flag.FlagSet) (apply func() error) {
	strs, ints := map[string]*string{}, map[string]*string{}
	keys := func(m map[string]*string) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	s := c.strings()
	for _, k := range keys(s) {
		strs[k] = fs.String(flagName(k), "", flagUsage(k))
	}
	is := c.ints()
	for k := range is {
		ints[k] = nil
	}
	for _, k := range keys(ints) {
		ints[k] = fs.String(flagName(k), "", flagUsage(k))
	}
	capacity := fs.String("capacity", "", flagUsage("QL3_CAPACITY"))
	inbox := fs.String("inbox-max", "", flagUsage("QL3_INBOX_MAX"))
	labels := fs.String("labels", "", flagUsage("QL3_LABELS"))
	var interps repeated
	fs.Var(&interps, "interpreter", flagUsage("QL3_INTERPRETERS"))
	return func() error {
		env := map[string]string{}
		for k, p := range strs {
			env[k] = *p
		}
		for k, p := range ints {
			env[k] = *p
		}
		env["QL3_CAPACITY"], env["QL3_INBOX_MAX"], env["QL3_LABELS"] = *capacity, *inbox, *labels
		env["QL3_INTERPRETERS"] = strings.Join(interps, ",")
		if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil {
			return fmt.Errorf("--%s", strings.TrimPrefix(err.Error(), "QL3_"))
		}
		return nil
	}
}

// Settings is a validated Config turned into the pieces' configs.
type Settings struct {
	Agent          agent.Config
	InboxMax       int
	RequestTimeout time.Duration
	WorkDir        string
}

// Validate checks c and applies the profile.
func (c Config) Validate() (Settings, error) {
	var s Settings
	switch {
	case c.IngressURL == "":
		return s, fmt.Errorf("ingressUrl: must be set (https://host:5801)")
	case c.CredentialFile == "" || c.CertFile == "" || c.KeyFile == "" || c.CAFile == "":
		return s, fmt.Errorf("credentialFile, certFile, keyFile and caFile: all must be set")
	case c.StateDir == "" || !filepath.IsAbs(c.StateDir):
		return s, fmt.Errorf("stateDir: must be an absolute path")
	}
	a := agent.Config{}
	switch c.Profile {
	case "", "router":
		a.Capacity, a.Cadence, a.LogBytes = agent.RouterCapacity, agent.RouterCadence, agent.RouterLogBytes
	case "node":
		a.Capacity, a.Cadence, a.LogBytes = agent.NodeCapacity, agent.NodeCadence, agent.NodeLogBytes
	default:
		return s, fmt.Errorf("profile: must be router or node, got %q", c.Profile)
	}
	if c.Capacity != 0 {
		a.Capacity = c.Capacity
	}
	if c.CadenceMs != 0 {
		a.Cadence = time.Duration(c.CadenceMs) * time.Millisecond
	}
	if c.LogMaxBytes != 0 {
		a.LogBytes = c.LogMaxBytes
	}
	ms := func(field string, v, lo, hi int64) (time.Duration, error) {
		if v == 0 {
			return 0, nil
		}
		if v < lo || v > hi {
			return 0, fmt.Errorf("%s: must be %d..%d, got %d", field, lo, hi, v)
		}
		return time.Duration(v) * time.Millisecond, nil
	}
	var err error
	if a.Heartbeat, err = ms("heartbeatMs", c.HeartbeatMs, 5_000, 300_000); err != nil {
		return s, err
	}
	if a.DrainGrace, err = ms("drainGraceMs", c.DrainGraceMs, 1, 3_600_000); err != nil {
		return s, err
	}
	if a.KillGrace, err = ms("killGraceMs", c.KillGraceMs, 1, lease.MaxKillGraceMs); err != nil {
		return s, err
	}
	if a.FenceMargin, err = ms("fenceMarginMs", c.FenceMarginMs, 1, lease.MaxFenceMarginMs); err != nil {
		return s, err
	}
	// The lease policy (core/lease) with this worker's margins: a fence
	// margin and kill grace that leave the authority's attempt lease no
	// room for a heartbeat would stop every running attempt on its own.
	p := lease.Default()
	if c.FenceMarginMs != 0 {
		p.FenceMarginMs = c.FenceMarginMs
	}
	if c.KillGraceMs != 0 {
		p.KillGraceMs = c.KillGraceMs
	}
	if err := p.Validate(); err != nil {
		return s, fmt.Errorf("fenceMarginMs %d with killGraceMs %d: %w", p.FenceMarginMs, p.KillGraceMs, err)
	}
	if s.RequestTimeout, err = ms("requestTimeoutMs", c.RequestTimeoutMs, 1_000, int64(client.MaxTimeout/time.Millisecond)); err != nil {
		return s, err
	}
	if c.InboxMax < 0 || c.InboxMax > journal.HardInbox {
		return s, fmt.Errorf("inboxMax: must be 1..%d, got %d", journal.HardInbox, c.InboxMax)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return s, err
	}
	if c.LogFormat != "" && c.LogFormat != "text" && c.LogFormat != "json" {
		return s, fmt.Errorf("logFormat: must be text or json, got %.16q", c.LogFormat)
	}
	if a.Interpreters, err = scriptpath.NewInterpreters(scriptpath.SplitInterpreters(c.Interpreters)); err != nil {
		return s, fmt.Errorf("interpreters: %w", err)
	}
	s.Agent, s.InboxMax = a, c.InboxMax
	s.WorkDir = c.WorkDir
	if s.WorkDir == "" {
		s.WorkDir = filepath.Join(c.StateDir, "work")
	}
	return s, nil
}

// repeated is a flag given once per value (--interpreter .py=P --interpreter .ts=Q).
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
