package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Defaults (DESIGN.md §8).
const (
	DefaultListen            = "127.0.0.1:5700"
	DefaultDataDir           = "./data"
	DefaultMisfireGraceMs    = 30_000
	MaxMisfireGraceMs        = 300_000
	DefaultMaxConcurrency    = 4
	MaxMaxConcurrency        = 256
	DefaultLogMaxBytes       = 4 << 20
	MaxLogMaxBytes           = 1 << 30
	DefaultLogRetentionHours = 7 * 24
	DefaultLogMaxTotalBytes  = 1 << 30
	DefaultKillGraceMs       = 10_000
	DefaultDrainGraceMs      = 30_000
	MaxDrainGraceMs          = 3_600_000
	maxConfigFileBytes       = 64 << 10
)

// Config is everything ql3-edge reads from its config file, environment and
// flags. Precedence, lowest first: defaults, config file, QL3_* environment
// variables, command-line flags. Server and client share one file so an
// operator writes the data directory and address once.
type Config struct {
	// Server.
	Listen            string `json:"listen,omitempty"`            // QL3_LISTEN
	DataDir           string `json:"dataDir,omitempty"`           // QL3_DATA_DIR
	NoAuth            bool   `json:"noAuth,omitempty"`            // QL3_NO_AUTH; loopback listeners only
	TLSCert           string `json:"tlsCert,omitempty"`           // QL3_TLS_CERT: PEM certificate; with tlsKey the API serves HTTPS
	TLSKey            string `json:"tlsKey,omitempty"`            // QL3_TLS_KEY: PEM private key
	MisfireGraceMs    int64  `json:"misfireGraceMs,omitempty"`    // QL3_MISFIRE_GRACE_MS
	MaxConcurrency    int    `json:"maxConcurrency,omitempty"`    // QL3_MAX_CONCURRENCY
	KillGraceMs       int64  `json:"killGraceMs,omitempty"`       // QL3_KILL_GRACE_MS: SIGTERM → SIGKILL
	DrainGraceMs      int64  `json:"drainGraceMs,omitempty"`      // QL3_DRAIN_GRACE_MS: running attempts may finish on shutdown
	LogMaxBytes       int64  `json:"logMaxBytes,omitempty"`       // QL3_LOG_MAX_BYTES: per attempt
	LogMaxTotalBytes  int64  `json:"logMaxTotalBytes,omitempty"`  // QL3_LOG_MAX_TOTAL_BYTES
	LogRetentionHours int64  `json:"logRetentionHours,omitempty"` // QL3_LOG_RETENTION_HOURS: finished runs and their logs
	LogLevel          string `json:"logLevel,omitempty"`          // QL3_LOG_LEVEL: debug|info|warn|error
	LogFormat         string `json:"logFormat,omitempty"`         // QL3_LOG_FORMAT: text|json
	EnvKeyFile        string `json:"envKeyFile,omitempty"`        // QL3_ENV_KEY_FILE: the env store's key file (envkey.go)
	OpenTimeZone      string `json:"openTimeZone,omitempty"`      // QL3_OPEN_TIME_ZONE: zone of triggers the Open API creates (ADR 0048)
	Interpreters      string `json:"interpreters,omitempty"`      // QL3_INTERPRETERS: script interpreter overrides, ".py=/opt/py/bin/python3,.ts=tsx"

	// Client.
	Addr      string `json:"addr,omitempty"`      // QL3_ADDR: server to talk to
	TokenFile string `json:"tokenFile,omitempty"` // QL3_TOKEN_FILE; QL3_TOKEN overrides (env only, never in a file)
}

// DefaultConfig returns the built-in defaults.
func DefaultConfig() Config {
	return Config{
		Listen:            DefaultListen,
		DataDir:           DefaultDataDir,
		MisfireGraceMs:    DefaultMisfireGraceMs,
		MaxConcurrency:    DefaultMaxConcurrency,
		KillGraceMs:       DefaultKillGraceMs,
		DrainGraceMs:      DefaultDrainGraceMs,
		LogMaxBytes:       DefaultLogMaxBytes,
		LogMaxTotalBytes:  DefaultLogMaxTotalBytes,
		LogRetentionHours: DefaultLogRetentionHours,
		LogLevel:          "info",
		LogFormat:         "text",
		Addr:              DefaultListen,
	}
}

// TokenFilePath is where the admin token's plaintext lives for clients.
func (c Config) TokenFilePath() string {
	if c.TokenFile != "" {
		return c.TokenFile
	}
	return filepath.Join(c.DataDir, TokenFileName)
}

// LoadConfigFile overlays the JSON file at path onto c. Unknown fields,
// duplicate keys and trailing data are errors that name the field.
func (c *Config) LoadConfigFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errs.Invalidf("config", "reading the config file: %v", err)
	}
	file, err := DecodeConfig(data)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	c.overlay(file)
	return nil
}

// DecodeConfig strictly decodes a config file's bytes.
func DecodeConfig(data []byte) (Config, error) {
	var file Config
	if len(data) > maxConfigFileBytes {
		return file, errs.TooLargef("config", "config file is %d bytes, limit is %d", len(data), maxConfigFileBytes)
	}
	lim := canonjson.Limits{MaxBytes: maxConfigFileBytes, MaxDepth: 1, MaxEntries: 64, MaxString: 4096}
	if err := canonjson.DecodeStrict(data, lim, &file); err != nil {
		return Config{}, err
	}
	return file, nil
}

// overlay copies the non-zero fields of o onto c.
func (c *Config) overlay(o Config) {
	setS := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setI := func(dst *int64, v int64) {
		if v != 0 {
			*dst = v
		}
	}
	setS(&c.Listen, o.Listen)
	setS(&c.DataDir, o.DataDir)
	setS(&c.TLSCert, o.TLSCert)
	setS(&c.TLSKey, o.TLSKey)
	if o.NoAuth {
		c.NoAuth = true
	}
	setI(&c.MisfireGraceMs, o.MisfireGraceMs)
	if o.MaxConcurrency != 0 {
		c.MaxConcurrency = o.MaxConcurrency
	}
	setI(&c.KillGraceMs, o.KillGraceMs)
	setI(&c.DrainGraceMs, o.DrainGraceMs)
	setI(&c.LogMaxBytes, o.LogMaxBytes)
	setI(&c.LogMaxTotalBytes, o.LogMaxTotalBytes)
	setI(&c.LogRetentionHours, o.LogRetentionHours)
	setS(&c.LogLevel, o.LogLevel)
	setS(&c.LogFormat, o.LogFormat)
	setS(&c.EnvKeyFile, o.EnvKeyFile)
	setS(&c.OpenTimeZone, o.OpenTimeZone)
	setS(&c.Interpreters, o.Interpreters)
	setS(&c.Addr, o.Addr)
	setS(&c.TokenFile, o.TokenFile)
}

// ApplyEnv overlays QL3_* variables read through getenv.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	str := map[string]*string{
		"QL3_LISTEN": &c.Listen, "QL3_DATA_DIR": &c.DataDir, "QL3_LOG_LEVEL": &c.LogLevel, "QL3_LOG_FORMAT": &c.LogFormat,
		"QL3_ADDR": &c.Addr, "QL3_TOKEN_FILE": &c.TokenFile,
		"QL3_TLS_CERT": &c.TLSCert, "QL3_TLS_KEY": &c.TLSKey, "QL3_ENV_KEY_FILE": &c.EnvKeyFile,
		"QL3_OPEN_TIME_ZONE": &c.OpenTimeZone,
		"QL3_INTERPRETERS":   &c.Interpreters,
	}
	for k, dst := range str {
		if v := getenv(k); v != "" {
			*dst = v
		}
	}
	ints := map[string]*int64{
		"QL3_MISFIRE_GRACE_MS": &c.MisfireGraceMs, "QL3_KILL_GRACE_MS": &c.KillGraceMs,
		"QL3_DRAIN_GRACE_MS": &c.DrainGraceMs,
		"QL3_LOG_MAX_BYTES":  &c.LogMaxBytes, "QL3_LOG_MAX_TOTAL_BYTES": &c.LogMaxTotalBytes,
		"QL3_LOG_RETENTION_HOURS": &c.LogRetentionHours,
	}
	for k, dst := range ints {
		if v := getenv(k); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return errs.Invalidf(k, "expected an integer, got %q", v)
			}
			*dst = n
		}
	}
	if v := getenv("QL3_MAX_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errs.Invalidf("QL3_MAX_CONCURRENCY", "expected an integer, got %q", v)
		}
		c.MaxConcurrency = n
	}
	if v := getenv("QL3_NO_AUTH"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errs.Invalidf("QL3_NO_AUTH", "expected true or false, got %q", v)
		}
		c.NoAuth = b
	}
	return nil
}

// ValidateServer checks the settings `serve` uses.
func (c Config) ValidateServer() error {
	switch {
	case c.Listen == "":
		return errs.Invalidf("listen", "must not be empty")
	case c.DataDir == "":
		return errs.Invalidf("dataDir", "must not be empty")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errs.Invalidf("tlsKey", "--tls-cert and --tls-key go together")
	case c.OpenTimeZone != "" && !validZone(c.OpenTimeZone):
		return errs.Invalidf("openTimeZone", "%.64q is not an IANA time zone (e.g. Asia/Shanghai)", c.OpenTimeZone)
	case c.MisfireGraceMs < 0 || c.MisfireGraceMs > MaxMisfireGraceMs:
		return errs.Invalidf("misfireGraceMs", "must be 0..%d, got %d", MaxMisfireGraceMs, c.MisfireGraceMs)
	case c.MaxConcurrency < 1 || c.MaxConcurrency > MaxMaxConcurrency:
		return errs.Invalidf("maxConcurrency", "must be 1..%d, got %d", MaxMaxConcurrency, c.MaxConcurrency)
	case c.KillGraceMs < 0 || c.KillGraceMs > int64(10*time.Minute/time.Millisecond):
		return errs.Invalidf("killGraceMs", "must be 0..600000, got %d", c.KillGraceMs)
	case c.DrainGraceMs < 0 || c.DrainGraceMs > MaxDrainGraceMs:
		return errs.Invalidf("drainGraceMs", "must be 0..%d, got %d", MaxDrainGraceMs, c.DrainGraceMs)
	case c.LogMaxBytes < 1024 || c.LogMaxBytes > MaxLogMaxBytes:
		return errs.Invalidf("logMaxBytes", "must be 1024..%d, got %d", MaxLogMaxBytes, c.LogMaxBytes)
	case c.LogMaxTotalBytes < c.LogMaxBytes:
		return errs.Invalidf("logMaxTotalBytes", "must be at least logMaxBytes (%d), got %d", c.LogMaxBytes, c.LogMaxTotalBytes)
	case c.LogRetentionHours < 1:
		return errs.Invalidf("logRetentionHours", "must be at least 1, got %d", c.LogRetentionHours)
	}
	if _, err := c.InterpreterTable(); err != nil {
		return err
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if _, err := parseFormat(c.LogFormat); err != nil {
		return err
	}
	return nil
}

func validZone(name string) bool {
	_, err := time.LoadLocation(name)
	return err == nil && name != "Local"
}

// InterpreterOverrides splits Interpreters ("EXT=PROGRAM,EXT=PROGRAM").
func (c Config) InterpreterOverrides() []string {
	return scriptpath.SplitInterpreters(c.Interpreters)
}

// InterpreterTable is the script interpreter table of this server: the
// defaults of core/scriptpath with the overrides.
func (c Config) InterpreterTable() (scriptpath.Interpreters, error) {
	t, err := scriptpath.NewInterpreters(c.InterpreterOverrides())
	if err != nil {
		return nil, errs.Prefix("interpreters", err)
	}
	return t, nil
}
