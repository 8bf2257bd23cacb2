package app

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/cli"
	"github.com/ql3/ql3/controlplane/ingress"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/schedule"
)

// Defaults (DESIGN.md §8).
const (
	DefaultListen   = "127.0.0.1:5800"
	DefaultServer   = cli.DefaultServer
	DefaultMaxConns = 8
	maxConfigBytes  = 64 << 10
)

// Config is everything ql3-control reads from its config file, QL3_*
// environment variables and flags. Precedence, lowest first: defaults, the
// JSON file (--config / QL3_CONFIG; unknown fields are errors), the
// environment, flags.
//
// Databases: either one DSN per role (each connecting as that LOGIN role),
// or a single DSN whose user may assume the roles: every pool then starts
// its sessions with "-c role=<ql3 role>" (SET ROLE at connect), so each path
// still runs with exactly its role's privileges. migrate connects with the
// migrator DSN, or the single DSN without a role.
type Config struct {
	Listen      string `json:"listen,omitempty"`      // QL3_LISTEN, --listen
	TLSCert     string `json:"tlsCert,omitempty"`     // QL3_TLS_CERT, --tls-cert
	TLSKey      string `json:"tlsKey,omitempty"`      // QL3_TLS_KEY, --tls-key
	RequireTLS  bool   `json:"requireTls,omitempty"`  // QL3_REQUIRE_TLS, --require-tls: refuse to serve plain HTTP
	NoScheduler bool   `json:"noScheduler,omitempty"` // QL3_NO_SCHEDULER, --no-scheduler: admin API only, no cluster scheduler in this replica
	Insecure    bool   `json:"insecure,omitempty"`    // QL3_INSECURE, --insecure: allow API tokens over plain HTTP beyond loopback (serve and client)
	// SecretKeyFile opens the data keys of the env store (ADR 0051) and of
	// notification channel credentials (ADR 0053): the same 0600 key file
	// on every replica; required once the env store has a key, and for
	// notifications (without it they are off).
	SecretKeyFile string `json:"secretKeyFile,omitempty"` // QL3_SECRET_KEY_FILE, --secret-key-file
	// SubsDir is this replica's private folder of subscriptions' git
	// caches and stages (ADR 0061); "" = a folder in the system's temp.
	SubsDir string `json:"subsDir,omitempty"` // QL3_SUBS_DIR, --subs-dir

	DSN         string `json:"dsn,omitempty"`         // QL3_DSN, --dsn
	AdminDSN    string `json:"adminDsn,omitempty"`    // QL3_ADMIN_DSN, --admin-dsn
	RuntimeDSN  string `json:"runtimeDsn,omitempty"`  // QL3_RUNTIME_DSN, --runtime-dsn
	IngressDSN  string `json:"ingressDsn,omitempty"`  // QL3_INGRESS_DSN, --ingress-dsn
	MigratorDSN string `json:"migratorDsn,omitempty"` // QL3_MIGRATOR_DSN, --migrator-dsn
	MaxConns    int64  `json:"maxConns,omitempty"`    // QL3_MAX_CONNS, --max-conns: per pool

	// The worker ingress (ADR 0010): mTLS on its own port, started when its
	// TLS files are given.
	IngressListen         string `json:"ingressListen,omitempty"`         // QL3_INGRESS_LISTEN, --ingress-listen
	IngressTLSCert        string `json:"ingressTlsCert,omitempty"`        // QL3_INGRESS_TLS_CERT, --ingress-tls-cert: server certificate (PEM)
	IngressTLSKey         string `json:"ingressTlsKey,omitempty"`         // QL3_INGRESS_TLS_KEY, --ingress-tls-key
	IngressClientCA       string `json:"ingressClientCa,omitempty"`       // QL3_INGRESS_CLIENT_CA, --ingress-client-ca: 1–16 worker CA certificates
	IngressCRL            string `json:"ingressCrl,omitempty"`            // QL3_INGRESS_CRL, --ingress-crl: optional CRLs of those CAs
	IngressMaxConns       int64  `json:"ingressMaxConns,omitempty"`       // QL3_INGRESS_MAX_CONNS, --ingress-max-conns: ingress pool (1..16)
	IngressInFlight       int64  `json:"ingressInFlight,omitempty"`       // QL3_INGRESS_IN_FLIGHT, --ingress-in-flight: requests served at once
	IngressAuthCacheMs    int64  `json:"ingressAuthCacheMs"`              // QL3_INGRESS_AUTH_CACHE_MS, --ingress-auth-cache-ms: principal cache TTL (0..10000, 0 = off; ADR 0010)
	CredentialReconcileMs int64  `json:"credentialReconcileMs,omitempty"` // QL3_CREDENTIAL_RECONCILE_MS: how often superseded credentials are revoked
	SessionHeartbeatMs    int64  `json:"sessionHeartbeatMs,omitempty"`    // QL3_SESSION_HEARTBEAT_MS: heartbeat the ingress names to workers (5000..60000)
	SessionLeaseMs        int64  `json:"sessionLeaseMs,omitempty"`        // QL3_SESSION_LEASE_MS: worker session lease (≥ 2 heartbeats)
	// Pacing of empty pulls (ADR 0030).
	PullMarginMs int64 `json:"pullMarginMs,omitempty"` // QL3_PULL_MARGIN_MS, --pull-margin-ms: added to the time until the next occurrence (0..10000)
	PullFloorMs  int64 `json:"pullFloorMs,omitempty"`  // QL3_PULL_FLOOR_MS, --pull-floor-ms: shortest pause an empty pull is told (100..60000)

	DefaultGraceMs int64  `json:"defaultGraceMs,omitempty"` // QL3_DEFAULT_GRACE_MS: misfire grace of triggers published without one
	OpenTimeZone   string `json:"openTimeZone,omitempty"`   // QL3_OPEN_TIME_ZONE, --open-time-zone: zone of the triggers QingLong's Open API creates (ADR 0057)
	// The cluster scheduler (ADR 0006).
	SchedulerBudget  int64 `json:"schedulerBudget,omitempty"`  // QL3_SCHEDULER_BUDGET, --scheduler-budget: claims per round (1..256)
	SchedulerLeaseMs int64 `json:"schedulerLeaseMs,omitempty"` // QL3_SCHEDULER_LEASE_MS, --scheduler-lease-ms: claim lease (1000..60000)
	// The lifecycle sweeper and retention (ADRs 0013, 0016).
	CancelGraceMs       int64  `json:"cancelGraceMs,omitempty"`       // QL3_CANCEL_GRACE_MS, --cancel-grace-ms: wait past a started lease's end before lost (0..300000)
	LogRetentionHours   int64  `json:"logRetentionHours,omitempty"`   // QL3_LOG_RETENTION_HOURS: log chunks of finished Runs
	RunRetentionHours   int64  `json:"runRetentionHours,omitempty"`   // QL3_RUN_RETENTION_HOURS: finished Runs with their rows
	AuditRetentionHours int64  `json:"auditRetentionHours,omitempty"` // QL3_AUDIT_RETENTION_HOURS: audit lines
	LogLevel            string `json:"logLevel,omitempty"`            // QL3_LOG_LEVEL: debug|info|warn|error
	LogFormat           string `json:"logFormat,omitempty"`           // QL3_LOG_FORMAT, --log-format: json (default) or text

	// Client subcommands.
	Server    string `json:"server,omitempty"`    // QL3_SERVER, --server: admin API base URL
	TokenFile string `json:"tokenFile,omitempty"` // QL3_TOKEN_FILE, --token-file; QL3_TOKEN (env only) wins
	CAFile    string `json:"caFile,omitempty"`    // QL3_CA_FILE, --ca-file: CA bundle for an https server
}

// DefaultConfig returns the built-in defaults.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen, MaxConns: DefaultMaxConns, DefaultGraceMs: publication.PublishDefaultGraceMs,
		SchedulerBudget: controlplane.DefaultClaimBudget, SchedulerLeaseMs: lease.DefaultClaimMs,
		CancelGraceMs:       lease.DefaultCancelGraceMs,
		LogRetentionHours:   int64(controlplane.DefaultLogRetention / time.Hour),
		RunRetentionHours:   int64(controlplane.DefaultRunRetention / time.Hour),
		AuditRetentionHours: int64(controlplane.DefaultAuditRetention / time.Hour),
		LogLevel:            "info", LogFormat: "json", Server: DefaultServer,
		IngressListen: DefaultIngressListen, IngressMaxConns: DefaultIngressMaxConns, IngressInFlight: ingress.DefaultMaxInFlight,
		IngressAuthCacheMs:    ingress.DefaultPrincipalCacheTTL.Milliseconds(),
		CredentialReconcileMs: DefaultCredentialReconcileMs, SessionHeartbeatMs: lease.DefaultHeartbeatMs,
		SessionLeaseMs: lease.DefaultSessionMs,
		PullMarginMs:   pullpace.DefaultPullMargin.Milliseconds(), PullFloorMs: pullpace.DefaultPullFloor.Milliseconds()}
}

// setting binds one config field to its flag and environment names.
type setting struct {
	flag, usage string
	str         *string
	boolean     *bool
	integer     *int64
	scope       settingScope // the commands that take it as a flag
}

func (s setting) env() string {
	return "QL3_" + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_"))
}

func (c *Config) settings() []setting {
	return []setting{
		{flag: "listen", usage: "admin API listen address", str: &c.Listen, scope: forServe},
		{flag: "tls-cert", usage: "TLS certificate file (PEM) for the admin API", str: &c.TLSCert, scope: forServe},
		{flag: "tls-key", usage: "TLS private key file (PEM) for the admin API", str: &c.TLSKey, scope: forServe},
		{flag: "require-tls", usage: "refuse to serve without --tls-cert/--tls-key (production)", boolean: &c.RequireTLS, scope: forServe},
		{flag: "no-scheduler", usage: "serve the admin API only; do not run the cluster scheduler in this replica", boolean: &c.NoScheduler, scope: forServe},
		{flag: "secret-key-file", usage: "the key file of the env store and of notification credentials (0600, absolute path, the same on every replica; `ql3-control env key-init` makes one); required once the env store has a key, notifications are off without it (ADR 0051, 0053)", str: &c.SecretKeyFile, scope: forServe | forDatabase},
		{flag: "subs-dir", usage: "this replica's private folder for subscriptions' git caches and stages (default: a folder in the system's temp)", str: &c.SubsDir, scope: forServe},
		{flag: "dsn", usage: "single PostgreSQL DSN; pools assume the ql3 roles (-c role=...)", str: &c.DSN, scope: forAll &^ forClient},
		{flag: "admin-dsn", usage: "DSN that logs in as ql3_admin", str: &c.AdminDSN, scope: forServe | forDatabase},
		{flag: "runtime-dsn", usage: "DSN that logs in as ql3_runtime", str: &c.RuntimeDSN, scope: forServe},
		{flag: "ingress-dsn", usage: "DSN that logs in as ql3_worker_ingress", str: &c.IngressDSN, scope: forServe},
		{flag: "migrator-dsn", usage: "DSN for migrate (a superuser or a member of ql3_migrator)", str: &c.MigratorDSN, scope: forMigrate},
		{flag: "max-conns", usage: "connections per pool", integer: &c.MaxConns, scope: forServe | forDatabase},
		{flag: "ingress-listen", usage: "worker ingress listen address (mTLS)", str: &c.IngressListen, scope: forServe},
		{flag: "ingress-tls-cert", usage: "worker ingress server certificate (PEM, absolute path; reloaded on SIGHUP and when it changes)", str: &c.IngressTLSCert, scope: forServe},
		{flag: "ingress-tls-key", usage: "worker ingress private key (PEM, absolute path, not group/world-writable)", str: &c.IngressTLSKey, scope: forServe},
		{flag: "ingress-client-ca", usage: "CA bundle (1-16 certificates) that issues worker client certificates (absolute path)", str: &c.IngressClientCA, scope: forServe},
		{flag: "ingress-crl", usage: "optional CRL file of the worker CAs (absolute path)", str: &c.IngressCRL, scope: forServe},
		{flag: "ingress-max-conns", usage: "worker ingress PostgreSQL connections (1..16)", integer: &c.IngressMaxConns, scope: forServe},
		{flag: "ingress-in-flight", usage: "worker ingress requests served at once (1..1024)", integer: &c.IngressInFlight, scope: forServe},
		{flag: "ingress-auth-cache-ms", usage: "how long a successful worker authentication is reused (ms, 0..10000, 0 = every request asks PostgreSQL); a revoked credential or disabled worker is refused at most this long after the change (ADR 0010)", integer: &c.IngressAuthCacheMs, scope: forServe},
		{flag: "credential-reconcile-ms", usage: "how often superseded worker credentials are revoked (ms, 1000..60000)", integer: &c.CredentialReconcileMs, scope: forServe},
		{flag: "session-heartbeat-ms", usage: "heartbeat interval the ingress names to workers (ms, 5000..60000 and under the attempt lease − fence margin − kill grace, 30000)", integer: &c.SessionHeartbeatMs, scope: forServe},
		{flag: "session-lease-ms", usage: "worker session lease (ms, at least 2 heartbeats, at most 600000)", integer: &c.SessionLeaseMs, scope: forServe},
		{flag: "pull-margin-ms", usage: "added to the time until the cluster's next scheduled occurrence when an empty pull is told when to come back: the admission lag a pull should not beat (ms, 0..10000; ADR 0030)", integer: &c.PullMarginMs, scope: forServe},
		{flag: "pull-floor-ms", usage: "shortest pause an empty pull is told (ms, 100..60000): bounds each idle worker's pull rate when occurrences are dense; raise it for large fleets (ADR 0030)", integer: &c.PullFloorMs, scope: forServe},
		{flag: "default-grace-ms", usage: "misfire grace of triggers published without one: how late an occurrence may fire before its misfire policy applies (ms, 0..300000; time under a dead replica's claim is not counted, ADR 0002)", integer: &c.DefaultGraceMs, scope: forServe},
		{flag: "open-time-zone", usage: "IANA time zone of the triggers QingLong's Open API (/open/crons) creates; QingLong's schedules carry none (default UTC; ADR 0057)", str: &c.OpenTimeZone, scope: forServe},
		{flag: "scheduler-budget", usage: "schedules one scheduler round claims and admits (1..256; raise it for large same-second bursts)", integer: &c.SchedulerBudget, scope: forServe},
		{flag: "scheduler-lease-ms", usage: "claim lease of the scheduler (ms, 1000..60000)", integer: &c.SchedulerLeaseMs, scope: forServe},
		{flag: "cancel-grace-ms", usage: "how long past the end of a started lease the sweeper waits before the attempt is lost (ms, 0..300000; the workers' SIGTERM→SIGKILL grace)", integer: &c.CancelGraceMs, scope: forServe},
		{flag: "log-retention-hours", usage: "keep log chunks of finished runs this long (1..87600)", integer: &c.LogRetentionHours, scope: forServe},
		{flag: "run-retention-hours", usage: "keep finished runs with their attempts, events and logs this long (1..87600)", integer: &c.RunRetentionHours, scope: forServe},
		{flag: "audit-retention-hours", usage: "keep audit lines this long (1..87600)", integer: &c.AuditRetentionHours, scope: forServe},
		{flag: "log-level", usage: "debug, info, warn or error", str: &c.LogLevel, scope: forAll},
		{flag: "log-format", usage: "json (default: one object per line, for collectors) or text (slog key=value lines)", str: &c.LogFormat, scope: forAll},
		{flag: "insecure", usage: "allow API tokens over plain HTTP beyond loopback (serve: listen there without TLS; client: send the token to a non-loopback http:// server)", boolean: &c.Insecure, scope: forServe | forClient},
		{flag: "server", usage: "admin API base URL for client commands", str: &c.Server, scope: forClient},
		{flag: "token-file", usage: "file holding the API token for client commands (QL3_TOKEN wins)", str: &c.TokenFile, scope: forClient},
		{flag: "ca-file", usage: "CA bundle (PEM) to verify an https server", str: &c.CAFile, scope: forClient},
	}
}

// set parses raw into the setting; name is the flag or variable, for errors.
func (s setting) set(name, raw string) error {
	switch {
	case s.str != nil:
		*s.str = raw
	case s.boolean != nil:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errs.Invalidf(name, "must be true or false, got %.32q", raw)
		}
		*s.boolean = b
	case s.integer != nil:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return errs.Invalidf(name, "must be an integer, got %.32q", raw)
		}
		*s.integer = n
	}
	return nil
}

// DecodeConfig strictly decodes a JSON config file.
func DecodeConfig(data []byte, into *Config) error {
	lim := canonjson.Limits{MaxBytes: maxConfigBytes, MaxDepth: 1, MaxEntries: 64, MaxString: 4096}
	if err := canonjson.DecodeStrict(data, lim, into); err != nil {
		return err
	}
	return nil
}

func loadConfigFile(path string, into *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if err := DecodeConfig(data, into); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// applyEnv overlays the QL3_* variables that are set.
func (c *Config) applyEnv(getenv func(string) string) error {
	for _, s := range c.settings() {
		if v := getenv(s.env()); v != "" {
			if err := s.set(s.env(), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateServe checks what serve needs.
func (c Config) validateServe() error {
	if c.AdminDSN == "" && c.DSN == "" {
		return errs.Invalidf("dsn", "serve needs --admin-dsn or --dsn (QL3_ADMIN_DSN / QL3_DSN)")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errs.Invalidf("tls-key", "--tls-cert and --tls-key go together")
	}
	if c.RequireTLS && c.TLSCert == "" {
		return errs.Invalidf("require-tls", "--require-tls is set but no --tls-cert/--tls-key was given")
	}
	if c.Listen == "" {
		return errs.Invalidf("listen", "required")
	}
	if !c.NoScheduler && c.RuntimeDSN == "" && c.DSN == "" {
		return errs.Invalidf("runtime-dsn", "the scheduler needs --runtime-dsn or --dsn (QL3_RUNTIME_DSN / QL3_DSN), or --no-scheduler")
	}
	if c.DefaultGraceMs < 0 || c.DefaultGraceMs > schedule.MaxGraceMs {
		return errs.Invalidf("default-grace-ms", "must be 0..%d, got %d", schedule.MaxGraceMs, c.DefaultGraceMs)
	}
	if c.OpenTimeZone != "" {
		if _, err := time.LoadLocation(c.OpenTimeZone); err != nil || c.OpenTimeZone == "Local" {
			return errs.Invalidf("open-time-zone", "%.64q is not an IANA time zone (e.g. Asia/Shanghai)", c.OpenTimeZone)
		}
	}
	if err := c.validateLease(); err != nil {
		return err
	}
	if err := c.validateIngress(); err != nil {
		return err
	}
	if c.SchedulerBudget < 1 || c.SchedulerBudget > controlplane.MaxClaimBudget {
		return errs.Invalidf("scheduler-budget", "must be 1..%d, got %d", controlplane.MaxClaimBudget, c.SchedulerBudget)
	}
	if err := c.validateSweep(); err != nil {
		return err
	}
	return c.validatePool()
}

// Worker ingress defaults (DESIGN.md §8).
const (
	DefaultIngressListen         = ":5801"
	DefaultIngressMaxConns       = 4
	MaxIngressMaxConns           = 16
	DefaultCredentialReconcileMs = 5_000
)

// ingressEnabled: the ingress runs when its TLS material is configured.
func (c Config) ingressEnabled() bool {
	return c.IngressTLSCert != "" || c.IngressTLSKey != "" || c.IngressClientCA != ""
}

func (c Config) validateIngress() error {
	if c.CredentialReconcileMs < 1000 || c.CredentialReconcileMs > 60_000 {
		return errs.Invalidf("credential-reconcile-ms", "must be 1000..60000, got %d", c.CredentialReconcileMs)
	}
	if c.PullMarginMs < 0 || c.PullMarginMs > protocol.MaxPullMarginMs {
		return errs.Invalidf("pull-margin-ms", "must be 0..%d, got %d", protocol.MaxPullMarginMs, c.PullMarginMs)
	}
	if c.PullFloorMs < protocol.MinRetryAfterMs || c.PullFloorMs > protocol.MaxRetryAfterMs {
		return errs.Invalidf("pull-floor-ms", "must be %d..%d, got %d", protocol.MinRetryAfterMs, protocol.MaxRetryAfterMs, c.PullFloorMs)
	}
	if !c.ingressEnabled() {
		if c.IngressCRL != "" {
			return errs.Invalidf("ingress-crl", "needs --ingress-tls-cert, --ingress-tls-key and --ingress-client-ca")
		}
		return nil
	}
	for _, f := range []struct{ name, path string }{
		{"ingress-tls-cert", c.IngressTLSCert}, {"ingress-tls-key", c.IngressTLSKey},
		{"ingress-client-ca", c.IngressClientCA}, {"ingress-crl", c.IngressCRL},
	} {
		if f.path == "" && f.name != "ingress-crl" {
			return errs.Invalidf(f.name, "the worker ingress needs --ingress-tls-cert, --ingress-tls-key and --ingress-client-ca together")
		}
		if f.path != "" && !filepath.IsAbs(f.path) {
			return errs.Invalidf(f.name, "must be an absolute path")
		}
	}
	if c.IngressListen == "" {
		return errs.Invalidf("ingress-listen", "required")
	}
	if c.RuntimeDSN == "" && c.DSN == "" {
		return errs.Invalidf("runtime-dsn", "the worker ingress's dispatcher needs --runtime-dsn or --dsn (QL3_RUNTIME_DSN / QL3_DSN)")
	}
	if c.IngressMaxConns < 1 || c.IngressMaxConns > MaxIngressMaxConns {
		return errs.Invalidf("ingress-max-conns", "must be 1..%d, got %d", MaxIngressMaxConns, c.IngressMaxConns)
	}
	if c.IngressInFlight < 1 || c.IngressInFlight > ingress.HardMaxInFlight {
		return errs.Invalidf("ingress-in-flight", "must be 1..%d, got %d", ingress.HardMaxInFlight, c.IngressInFlight)
	}
	if c.IngressAuthCacheMs < 0 || c.IngressAuthCacheMs > ingress.MaxPrincipalCacheTTL.Milliseconds() {
		return errs.Invalidf("ingress-auth-cache-ms", "must be 0..%d, got %d", ingress.MaxPrincipalCacheTTL.Milliseconds(), c.IngressAuthCacheMs)
	}
	return nil
}

// PullPacerOptions are the pacing settings of empty pulls (ADR 0030).
func (c Config) PullPacerOptions() pullpace.PullPacerOptions {
	// 0 means "the default" to the pacer; a configured 0 margin is kept
	// as the smallest positive one (1 ms).
	return pullpace.PullPacerOptions{Margin: max(time.Duration(c.PullMarginMs)*time.Millisecond, time.Millisecond),
		Floor: time.Duration(c.PullFloorMs) * time.Millisecond}
}

func (c Config) validatePool() error {
	if c.MaxConns < 1 || c.MaxConns > 1000 {
		return errs.Invalidf("max-conns", "must be 1..1000, got %d", c.MaxConns)
	}
	return nil
}

// roleDSN returns the DSN a pool for role connects with: the role's own
// DSN, else the single DSN made to assume the role at connect.
func (c Config) roleDSN(role string) (string, error) {
	own := map[string]string{postgres.RoleAdmin: c.AdminDSN, postgres.RoleRuntime: c.RuntimeDSN,
		postgres.RoleWorkerIngress: c.IngressDSN}[role]
	if own != "" {
		return own, nil
	}
	if c.DSN == "" {
		return "", errs.Invalidf("dsn", "no DSN for role %s: set --dsn or the role's own DSN", role)
	}
	return withRole(c.DSN, role)
}

// withRole adds "-c role=<role>" to a DSN's startup options, in URL or
// keyword/value form. A keyword/value DSN that sets options itself is
// refused rather than merged: use per-role DSNs then.
func withRole(dsn, role string) (string, error) {
	opt := "-c role=" + role
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errs.Invalidf("dsn", "not a valid PostgreSQL URL") // never echo: it may hold a password
		}
		q := u.Query()
		if prev := q.Get("options"); prev != "" {
			opt = prev + " " + opt
		}
		q.Set("options", opt)
		// Encode writes a space as "+", which libpq and pgx pass to the
		// server verbatim ("+role"); only %20 is a space to them. Encode
		// escapes a literal "+" as %2B, so every "+" left is a space.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String(), nil
	}
	if strings.Contains(dsn, "options=") {
		return "", errs.Invalidf("dsn", "a keyword/value --dsn that sets options cannot assume roles; give per-role DSNs")
	}
	return dsn + " options='" + opt + "'", nil
}

// Lease is this replica's lease policy (core/lease): the authority's side
// from the configuration; the workers' fence margin and kill grace at their
// defaults, the values a worker runs with unless told otherwise.
func (c Config) Lease() lease.Policy {
	p := lease.Default()
	p.ClaimMs, p.HeartbeatMs, p.SessionMs, p.CancelGraceMs = c.SchedulerLeaseMs, c.SessionHeartbeatMs, c.SessionLeaseMs, c.CancelGraceMs
	return p
}

// leaseFlags names the flag of each configurable field of the policy.
var leaseFlags = map[string]string{"claimMs": "scheduler-lease-ms", "heartbeatMs": "session-heartbeat-ms",
	"sessionMs": "session-lease-ms", "cancelGraceMs": "cancel-grace-ms"}

// validateLease refuses a lease policy core/lease refuses, naming the flag:
// among others a heartbeat a worker's running attempts would not survive
// (the message names the heartbeat and the give-up point).
func (c Config) validateLease() error {
	err := c.Lease().Validate()
	var e *errs.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	flag, ok := leaseFlags[e.Field]
	if !ok {
		flag = "lease." + e.Field
	}
	msg := e.Message
	for field, f := range leaseFlags {
		msg = strings.ReplaceAll(msg, field+" ", "--"+f+" ")
	}
	return errs.Invalidf(flag, "%s", msg)
}

// SweepOptions are the lifecycle sweeper's settings from the configuration.
func (c Config) SweepOptions() controlplane.SweepOptions {
	return controlplane.SweepOptions{CancelGrace: time.Duration(c.CancelGraceMs) * time.Millisecond,
		LogRetention: time.Duration(c.LogRetentionHours) * time.Hour, RunRetention: time.Duration(c.RunRetentionHours) * time.Hour,
		AuditRetention: time.Duration(c.AuditRetentionHours) * time.Hour}
}

// validateSweep names the flag of an out-of-range sweep setting.
func (c Config) validateSweep() error {
	if err := c.validateLease(); err != nil { // cancel-grace-ms is part of the lease policy
		return err
	}
	lo, hi := int64(controlplane.MinRetention/time.Hour), int64(controlplane.MaxRetention/time.Hour)
	for _, r := range []struct {
		flag string
		v    int64
	}{{"log-retention-hours", c.LogRetentionHours}, {"run-retention-hours", c.RunRetentionHours},
		{"audit-retention-hours", c.AuditRetentionHours}} {
		if r.v < lo || r.v > hi {
			return errs.Invalidf(r.flag, "must be %d..%d, got %d", lo, hi, r.v)
		}
	}
	if c.LogRetentionHours > c.RunRetentionHours {
		return errs.Invalidf("log-retention-hours", "must not exceed run-retention-hours (%d), got %d", c.RunRetentionHours, c.LogRetentionHours)
	}
	return nil
}
