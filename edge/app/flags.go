package app

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// ErrHelp is returned by ParseFlags after printing the --help text.
var ErrHelp = flag.ErrHelp

// configFileHelp documents the config file: the same settings as the flags
// and QL3_* variables (defaults < file < environment < flags), unknown
// fields refused. The README has the same table.
const configFileHelp = `
Config file (--config or $QL3_CONFIG): one JSON object, unknown fields are refused.
Precedence, lowest first: defaults, the file, QL3_* variables, flags.
  "listen"             string  API address                              $QL3_LISTEN     (127.0.0.1:5700)
  "dataDir"            string  data directory (one server per dir)      $QL3_DATA_DIR   (./data)
  "noAuth"             bool    serve without the token (loopback only)  $QL3_NO_AUTH
  "tlsCert", "tlsKey"  string  PEM files: serve HTTPS                   $QL3_TLS_CERT, $QL3_TLS_KEY
  "misfireGraceMs"     int     default misfire grace of new triggers    $QL3_MISFIRE_GRACE_MS    (30000)
  "maxConcurrency"     int     attempts running at once                 $QL3_MAX_CONCURRENCY     (4)
  "killGraceMs"        int     SIGTERM to SIGKILL wait                  $QL3_KILL_GRACE_MS       (10000)
  "drainGraceMs"       int     on shutdown, running attempts may finish $QL3_DRAIN_GRACE_MS      (30000)
  "logMaxBytes"        int     output kept per attempt                  $QL3_LOG_MAX_BYTES       (4194304)
  "logMaxTotalBytes"   int     kept logs in total                       $QL3_LOG_MAX_TOTAL_BYTES (1073741824)
  "logRetentionHours"  int     finished runs and logs are removed after $QL3_LOG_RETENTION_HOURS (168)
  "logLevel"           string  debug, info, warn, error                 $QL3_LOG_LEVEL  (info)
  "logFormat"          string  text or json                             $QL3_LOG_FORMAT (text)
  "envKeyFile"         string  env store key file (0600; keep a backup) $QL3_ENV_KEY_FILE (<dataDir>/env.key)
  "openTimeZone"       string  zone of triggers the QingLong Open API creates $QL3_OPEN_TIME_ZONE (UTC)
  "interpreters"       string  script interpreters: ".py=/opt/py/bin/python3,.ts=tsx"  $QL3_INTERPRETERS
  "addr"               string  CLI: server address or https:// URL      $QL3_ADDR       (127.0.0.1:5700)
  "tokenFile"          string  CLI: admin token file                    $QL3_TOKEN_FILE (<dataDir>/admin.token)
`

// ParseFlags reads the `serve` command line into m.Config: defaults, then
// the config file (--config or QL3_CONFIG), then QL3_* variables, then the
// flags that were given. Errors name the flag or field.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("ql3-edge serve", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	var (
		config       = fs.String("config", "", "JSON config file (default $QL3_CONFIG); its fields are listed below")
		listen       = fs.String("listen", "", "address to serve the API on (default $QL3_LISTEN, then "+DefaultListen+"); non-loopback addresses need the admin token for every request")
		dataDir      = fs.String("data-dir", "", "directory for the database, logs and admin token (default $QL3_DATA_DIR, then "+DefaultDataDir+")")
		tlsCert      = fs.String("tls-cert", "", "TLS certificate file (PEM); with --tls-key the API and panel serve HTTPS (default $QL3_TLS_CERT)")
		tlsKey       = fs.String("tls-key", "", "TLS private key file (PEM) for --tls-cert (default $QL3_TLS_KEY)")
		noAuth       = fs.Bool("no-auth", false, "serve without the admin token (refused unless --listen is a loopback address)")
		grace        = fs.Duration("misfire-grace", 0, "default misfire grace of new triggers (default 30s, max 5m)")
		maxConc      = fs.Int("max-concurrency", 0, "attempts running at once (default 4, max 256)")
		killGrace    = fs.Duration("kill-grace", 0, "wait between SIGTERM and SIGKILL when stopping an attempt (default 10s)")
		drainGrace   = fs.Duration("drain-grace", 0, "on SIGTERM/SIGINT, how long running attempts may finish before they are stopped and recorded cancelled (reason shutdown); a second signal stops them at once (default 30s, max 1h)")
		logMax       = fs.Int64("log-max-bytes", 0, "output kept per attempt in bytes (default 4 MiB, max 1 GiB); the rest is discarded and marked truncated")
		logTotal     = fs.Int64("log-max-total-bytes", 0, "total size of kept logs before the oldest are removed (default 1 GiB)")
		logRetention = fs.Duration("log-retention", 0, "remove finished runs and their logs older than this (default 168h)")
		logLevel     = fs.String("log-level", "", "debug, info (default), warn or error")
		logFormat    = fs.String("log-format", "", "text (default) or json: one slog record per line on stderr")
		openZone     = fs.String("open-time-zone", "", "IANA zone of triggers created through the QingLong Open API, whose schedules carry none (default $QL3_OPEN_TIME_ZONE, then UTC)")
		envKeyFile   = fs.String("env-key-file", "", "key file of the env store's encryption (default $QL3_ENV_KEY_FILE, then <data dir>/env.key; created 0600 on first start)")
		interps      stringFlags
	)
	fs.Var(&interps, "interpreter", "EXT=PROGRAM: the program that runs scripts with this extension (repeatable; e.g. .py=/opt/py/bin/python3); defaults .js/.mjs/.cjs node, .py python3, .sh bash, .ts tsx or ts-node")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: ql3-edge serve [flags]\n\n"+
			"Start the scheduler, the runner and the HTTP API (and web panel) in the foreground.\n"+
			"On first start an admin token is generated and written to <data dir>/admin.token (0600);\n"+
			"only its SHA-256 is kept (admin.token.sha256; delete it and restart to rotate the token).\n"+
			"Every request needs the token (Authorization: Bearer) or a panel session; from this machine over\n"+
			"a loopback address /metrics, the OpenAPI document and the schedule preview need none.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), configFileHelp)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	cfg := DefaultConfig()
	path := *config
	if path == "" {
		path = m.Getenv("QL3_CONFIG")
	}
	if path != "" {
		if err := cfg.LoadConfigFile(path); err != nil {
			return err
		}
	}
	if err := cfg.ApplyEnv(m.Getenv); err != nil {
		return err
	}
	var durErr error
	ms := func(name string, d time.Duration) int64 {
		if d < 0 {
			durErr = errors.Join(durErr, fmt.Errorf("--%s must not be negative", name))
		}
		return d.Milliseconds()
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "env-key-file":
			cfg.EnvKeyFile = *envKeyFile
		case "open-time-zone":
			cfg.OpenTimeZone = *openZone
		case "interpreter":
			cfg.Interpreters = strings.Join(interps, ",")
		case "listen":
			cfg.Listen = *listen
		case "data-dir":
			cfg.DataDir = *dataDir
		case "tls-cert":
			cfg.TLSCert = *tlsCert
		case "tls-key":
			cfg.TLSKey = *tlsKey
		case "no-auth":
			cfg.NoAuth = *noAuth
		case "misfire-grace":
			cfg.MisfireGraceMs = ms(f.Name, *grace)
		case "max-concurrency":
			cfg.MaxConcurrency = *maxConc
		case "kill-grace":
			cfg.KillGraceMs = ms(f.Name, *killGrace)
		case "drain-grace":
			cfg.DrainGraceMs = ms(f.Name, *drainGrace)
		case "log-max-bytes":
			cfg.LogMaxBytes = *logMax
		case "log-max-total-bytes":
			cfg.LogMaxTotalBytes = *logTotal
		case "log-retention":
			cfg.LogRetentionHours = int64(*logRetention / time.Hour)
		case "log-level":
			cfg.LogLevel = *logLevel
		case "log-format":
			cfg.LogFormat = *logFormat
		}
	})
	if durErr != nil {
		return durErr
	}
	if err := cfg.ValidateServer(); err != nil {
		return err
	}
	m.Config = cfg
	return nil
}

// stringFlags is a repeatable string flag.
type stringFlags []string

func (s *stringFlags) String() string     { return strings.Join(*s, ",") }
func (s *stringFlags) Set(v string) error { *s = append(*s, v); return nil }
