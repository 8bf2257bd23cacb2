package app

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/coordinator"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/accounts"
	"github.com/ql3/ql3/controlplane/postgres/depstore"
	"github.com/ql3/ql3/controlplane/postgres/openapps"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/qlcompat"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/panel"
)

// serve starts the replica in the order of DESIGN.md §3: config validation
// → database and schema readiness → startup recovery → cluster scheduler →
// worker ingress (:5801) → HTTP admission (the admin API). Close stops them in reverse. It refuses a
// database whose schema is not exactly this binary's (run migrate first),
// so it never writes into a schema it does not understand.
func (m *Main) serve(ctx context.Context) error {
	if err := m.Config.validateServe(); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if m.Config.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(m.Config.TLSCert, m.Config.TLSKey)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	// Bind first: a taken port or a plain-HTTP address beyond loopback is
	// refused before anything touches the database.
	ln, err := listenAdmin(m.Config.Listen, tlsCfg != nil, m.Config.Insecure)
	if err != nil {
		return err
	}
	if tlsCfg == nil && !isLoopbackAddr(ln.Addr()) {
		m.log.Warn("admin API serves plain HTTP beyond loopback (--insecure): API tokens cross the network unencrypted", "addr", ln.Addr().String())
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	started := false
	defer func() {
		if !started {
			ln.Close()
		}
	}()
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return err
	}
	if err := postgres.Readiness(ctx, pool); err != nil {
		return fmt.Errorf("database not ready (run `ql3-control migrate`): %w", err)
	}
	envs, err := m.openEnvStore(ctx, pool)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.envs = envs
	m.mu.Unlock()
	// Said once at start, and exported on /metrics for the standbys that
	// connect later.
	if rep, err := postgres.ReadReplication(ctx, pool); err != nil {
		m.log.Warn("could not read the replication settings", "err", err)
	} else if risk := rep.FailoverRisk(); risk != "" {
		m.log.Warn("exactly once does not survive an unplanned failover of this database", "reason", risk)
	}
	if !m.Config.NoScheduler {
		if err := m.startScheduler(ctx); err != nil {
			return err
		}
	}
	pub := publication.NewPublisher(pool, publication.PublisherOptions{DefaultGraceMs: m.Config.DefaultGraceMs})
	if err := m.startIngress(ctx, pub); err != nil {
		return err
	}
	runOps, err := m.runOps(ctx)
	if err != nil {
		return err
	}
	notifyPorts, err := m.startNotify(ctx) // notify.go
	if err != nil {
		return err
	}
	apps := openapps.New(pool) // QingLong's Open API (ADR 0057)
	// Subscriptions and their pull executor (subs.go, ADR 0061).
	subs, err := m.startSubscriptions(ctx, pool, pub, runOps)
	if err != nil {
		return err
	}
	scriptStore := scriptstore.New(pool)
	api := adminapi.New(adminapi.Config{
		Backend: pub, Logger: m.log, Version: m.Version, UI: panel.UI{}, Tokens: pub, Accounts: accounts.New(pool),
		Apps: apps, Open: qlcompat.New(qlcompat.Config{Backend: pub, Runs: runOps, Apps: apps, Envs: envs, Scripts: scriptStore, Logger: m.log, TimeZone: m.Config.OpenTimeZone, Version: m.Version}),
		Ready:   func(ctx context.Context) error { return postgres.Readiness(ctx, pool) },
		Queue:   queueHealth(pool, m.log), // queue_metrics.go (ADR 0066)
		Runs:    runOps,
		Envs:    envs,
		Scripts: scriptStore,
		Notify:  notifyPorts, Subscriptions: subs,
		Deps: depstore.New(pool), // the projects' dependencies (ADR 0062)
		// imports.go (ADR 0063)
		Imports: m.importService(ctx, pool, pub, envs, subs),
		DisableWorker: func(ctx context.Context, ref string) (bool, error) {
			return runops.DisableWorker(ctx, pool, ref)
		},
		Metrics: metricsCollector(pool, func() *coordinator.Coordinator {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.coord
		}, postgres.NewFinishedRuns(m.metricsSettleMs())),
	})
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
	}
	started = true
	m.mu.Lock()
	m.server, m.listener = srv, ln
	m.serveErr = make(chan error, 1)
	m.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.serveErr <- err
		}
		close(m.serveErr)
	}()
	m.log.Info("admin API listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil, "version", m.Version)
	return nil
}

func (m *Main) metricsSettleMs() int64 {
	if m.noMetricsSettle {
		return 0
	}
	return postgres.FinishedRunsSettleMs
}

// runOps is the admin API's runtime-role port (cancel, run-now, logs,
// wait reasons): on the scheduler's runtime pool, or on one of its own when
// this replica runs no scheduler.
func (m *Main) runOps(ctx context.Context) (*runops.RunOps, error) {
	m.mu.Lock()
	pool := m.runtimePool
	m.mu.Unlock()
	if pool == nil {
		var err error
		if pool, err = m.openRolePool(ctx, postgres.RoleRuntime, "ql3-control run control"); err != nil {
			return nil, err
		}
		m.mu.Lock()
		m.runtimePool = pool
		m.mu.Unlock()
	}
	return runops.NewRunOps(pool), nil
}

// startScheduler opens the runtime pool, runs startup recovery to the end
// (one lifecycle sweep pass, repeated while it leaves work behind: pristine
// queued Runs and live leases are left alone) and starts this replica's
// coordinator, which sweeps again before every round.
func (m *Main) startScheduler(ctx context.Context) error {
	pool, err := m.openRolePool(ctx, postgres.RoleRuntime, "ql3-control scheduler")
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.runtimePool = pool
	m.mu.Unlock()
	coord, err := coordinator.New(schedule.NewScheduler(pool), coordinator.Config{Budget: int(m.Config.SchedulerBudget),
		Lease: time.Duration(m.Config.SchedulerLeaseMs) * time.Millisecond, Diagnostics: coordinator.SlogSink(m.log),
		Sweep: m.Config.SweepOptions()})
	if err != nil {
		return err
	}
	rep, err := coord.Recover(ctx)
	if err != nil {
		return fmt.Errorf("startup recovery: %w", err)
	}
	m.log.Info("startup recovery done", "passes", rep.Passes, "changed", rep.Sweep.Changed(),
		"requeued", rep.Sweep.Requeued, "lost", rep.Sweep.Lost, "cancelled", rep.Sweep.Cancelled,
		"promoted", rep.Sweep.Promoted)
	if err := coord.Start(); err != nil {
		return err
	}
	m.mu.Lock()
	m.coord = coord
	m.mu.Unlock()
	m.log.Info("cluster scheduler started", "owner", coord.Owner())
	return nil
}

// migrate runs the migration runner over one connection as the migrator.
func (m *Main) migrate(ctx context.Context) error {
	dsn := m.Config.MigratorDSN
	if dsn == "" {
		dsn = m.Config.DSN
	}
	if dsn == "" {
		return errs.Invalidf("migrator-dsn", "migrate needs --migrator-dsn or --dsn (QL3_MIGRATOR_DSN / QL3_DSN)")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return errors.New("invalid migrator DSN") // pgx echoes the DSN, password included
	}
	cfg.RuntimeParams["application_name"] = "ql3-control migrate"
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return fmt.Errorf("connect for migrate: %w", postgres.Translate(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	res, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{Logger: m.log})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "schema at version %d (applied now: %v); roles and grants installed\n", res.Version, res.Applied)
	return err
}

func tokenCommands() map[string]command {
	return map[string]command{
		"token create": {
			summary: "create an admin API token and print it once",
			flags: func(fs *flag.FlagSet, a *cmdArgs) {
				fs.StringVar(&a.name, "name", "", "what the token is for (required)")
				fs.DurationVar(&a.ttl, "ttl", 0, "lifetime, e.g. 720h (0: until revoked)")
				tokenScopeFlags(fs, a)
			},
			run: (*Main).tokenCreate,
		},
		"token list": {summary: "list API tokens (never their secrets)", run: (*Main).tokenList},
		"token revoke": {
			summary: "revoke an API token by id",
			flags: func(fs *flag.FlagSet, a *cmdArgs) {
				fs.StringVar(&a.id, "id", "", "token id (the hex between ql3c_ and _)")
			},
			run: (*Main).tokenRevoke,
		},
	}
}

// cliActor marks mutations of the local token commands in the audit log:
// they hold no API token, only a database login as ql3_admin.
func cliActor(ctx context.Context) context.Context {
	return controlplane.WithActor(ctx, controlplane.Actor{Kind: "admin", ID: "cli"})
}

// Token commands talk to the database directly as ql3_admin: the first
// token cannot come from an API that needs a token.
func (m *Main) tokenCreate(ctx context.Context) error {
	if m.args.name == "" {
		return errs.Invalidf("name", "required")
	}
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return err
	}
	scopes, ttl, err := m.args.access.tokenScopes(m.args.ttl, time.Now())
	if err != nil {
		return err
	}
	tok, text, err := publication.NewPublisher(pool, publication.PublisherOptions{}).CreateScopedAPIToken(cliActor(ctx), m.args.name, scopes, ttl.Milliseconds())
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stderr, "created API token %s (%s); it is shown once, store it now\n", tok.ID, tok.Name)
	_, err = fmt.Fprintln(m.Stdout, text)
	return err
}

func (m *Main) tokenList(ctx context.Context) error {
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return err
	}
	list, err := publication.NewPublisher(pool, publication.PublisherOptions{}).ListAPITokens(ctx)
	if err != nil {
		return err
	}
	return m.outputValue(list)
}

func (m *Main) tokenRevoke(ctx context.Context) error {
	if m.args.id == "" {
		return errs.Invalidf("id", "required")
	}
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return err
	}
	tok, err := publication.NewPublisher(pool, publication.PublisherOptions{}).RevokeAPIToken(cliActor(ctx), m.args.id)
	if err != nil {
		return err
	}
	return m.outputValue(tok)
}
