// Package app assembles ql3-edge: it opens the store and the log store,
// starts the runner, the scheduler and the HTTP API, and shuts them down in
// order. cmd/ql3-edge only wires signals to it; end-to-end tests drive Main
// directly with a fake clock.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/edge/runner"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/panel"
	"github.com/ql3/ql3/worker/clock"
)

// File names inside the data directory.
const (
	DatabaseFileName = "ql3-edge.db"
	LogsDirName      = "logs"
	WorkDirName      = "work"
	StateDirName     = "state"
	ScriptsDirName   = "scripts" // the scripts folder (ADR 0044)
	BinDirName       = "bin"     // the task helper, first on every process's PATH
)

// Shutdown deadlines.
const (
	httpShutdownTimeout = 10 * time.Second
	logSweepInterval    = time.Hour
	// maxPruneBatchesPerSweep bounds one hourly sweep to 100 × 500 runs,
	// more than an every-second task adds in an hour.
	maxPruneBatchesPerSweep = 100
)

// Main is one ql3-edge server process.
type Main struct {
	Config Config
	// Clock drives the scheduler, the runner and every timestamp; tests
	// inject a clock.Fake. Default clock.Real.
	Clock   clock.Clock
	Version string
	// Program is how the banner names this binary in its example commands
	// (os.Args[0] from the CLI, so `make run` shows ./bin/ql3-edge).
	Program string
	Stdout  io.Writer // the startup banner (never the token)
	Stderr  io.Writer // logs
	Getenv  func(string) string
	// Logger overrides the logger built from Config.LogLevel.
	Logger *slog.Logger
	// Hooks observe the loops (tests).
	Hooks Hooks
	// HelperArgv is what the `task` helper calls (the program and its
	// arguments before the scripts folder's); default: this executable
	// with its hidden script-task subcommand.
	HelperArgv []string

	log      *slog.Logger
	store    *sqlite.Store
	logs     *logstore.Store
	engine   *engine
	lock     *dataDirLock
	listener net.Listener
	server   *http.Server
	token    adminToken

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	serveErr  chan error
	started   bool // Run completed: Close logs "stopped" only then
	closeOnce sync.Once
	closeErr  error
}

// NewMain returns a Main with defaults and the process environment.
func NewMain() *Main {
	return &Main{
		Config: DefaultConfig(),
		Clock:  clock.Real{},
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,
	}
}

// Run opens everything and starts serving; it returns once the API listens
// (or on the first error, after undoing what it started). Stop with Close.
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.Config
	if err := cfg.ValidateServer(); err != nil {
		return err
	}
	if m.Clock == nil {
		m.Clock = clock.Real{}
	}
	if m.Stdout == nil {
		m.Stdout = io.Discard
	}
	if m.Stderr == nil {
		m.Stderr = io.Discard
	}
	m.log = m.Logger
	if m.log == nil {
		if m.log, err = newLogger(m.Stderr, cfg.LogLevel, cfg.LogFormat); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	// Order matters. Nothing is created before the whole configuration is
	// accepted (#27): the TLS pair and --no-auth's address are checked
	// first. Then (#13) the data directory's exclusive lock, so a second
	// server on the same directory stops before it touches anything; then
	// the listener, so a busy port or a refused address fails before crash
	// recovery signals any process; only then the stores and recovery.
	tlsCfg, err := checkListen(ctx, cfg)
	if err != nil {
		return err
	}
	if err := ensureDataDir(cfg.DataDir); err != nil {
		return err
	}
	if m.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return err
	}
	var loopback bool
	if m.listener, loopback, err = bindAPI(cfg, tlsCfg); err != nil {
		return err
	}
	if !loopback && cfg.TLSCert == "" {
		m.log.Warn("serving plain HTTP beyond loopback: the admin token crosses the network unencrypted; use --tls-cert/--tls-key or listen on 127.0.0.1",
			"listen", m.listener.Addr().String())
	}
	if !cfg.NoAuth {
		if m.token, err = ensureAdminToken(cfg.DataDir); err != nil {
			return err
		}
	}
	m.store, err = sqlite.Open(ctx, filepath.Join(cfg.DataDir, DatabaseFileName), sqlite.Options{Clock: m.Clock})
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	if err := unlockEnvStore(ctx, m.store, cfg.EnvKeyFilePath(), m.log); err != nil {
		return err
	}
	m.logs, err = logstore.Open(logstore.Config{
		Dir:                filepath.Join(cfg.DataDir, LogsDirName),
		MaxBytesPerAttempt: cfg.LogMaxBytes,
		RetainAge:          time.Duration(cfg.LogRetentionHours) * time.Hour,
		RetainTotalBytes:   cfg.LogMaxTotalBytes,
	})
	if err != nil {
		return fmt.Errorf("opening the log store: %w", err)
	}
	scriptCfg, err := m.openScripts(cfg)
	if err != nil {
		return err
	}
	imports, err := m.openImport(ctx, cfg.DataDir, scriptCfg.Folder) // import.go
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	idle := newIdleTrim(m.Clock, idleQuietFor, releaseIdleMemory, m.log)
	hooks := m.Hooks
	testSleep := hooks.SchedulerSleep
	hooks.SchedulerSleep = func(until time.Time) {
		idle.schedulerSleeps(until)
		if testSleep != nil {
			testSleep(until)
		}
	}
	// Notifications (notify.go): the deliverer follows the run-event feed;
	// each attempt gets sendNotify's URL and its Run's token.
	notifier, err := m.newNotify()
	if err != nil {
		return err
	}
	subsCfg, err := m.newSubs(ctx, scriptCfg, notifier) // subs.go
	if err != nil {
		return err
	}
	imports.AfterApply = subsCfg.Subs.EnsureAll // imported subscriptions get their pull tasks
	m.engine, err = startEngine(runCtx, engineConfig{
		Store: m.store, Logs: m.logs, Clock: m.Clock, Logger: m.log,
		WorkRoot:       filepath.Join(cfg.DataDir, WorkDirName),
		StateDir:       filepath.Join(cfg.DataDir, StateDirName),
		MaxConcurrency: cfg.MaxConcurrency,
		KillGrace:      time.Duration(cfg.KillGraceMs) * time.Millisecond,
		DrainGrace:     time.Duration(cfg.DrainGraceMs) * time.Millisecond,
		Hooks:          hooks,
		AttemptEnv:     notifier.attemptEnv(),
		Scripts:        scriptCfg,
	})
	if err != nil {
		return err
	}
	m.engine.loop(runCtx, "notify", notifier.run)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.sweepRetention(runCtx)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		idle.run(runCtx)
	}()

	api := httpapi.New(httpapi.Config{
		Store: m.store, Logs: m.logs, Logger: m.log, Clock: m.Clock, Version: m.Version,
		Auth:           httpapi.Auth{Digest: m.token.Digest, Disabled: cfg.NoAuth},
		DefaultGraceMs: cfg.MisfireGraceMs,
		Ready:          m.ready,
		Containment:    m.engine.exec.Containment(),
		Metrics:        m.collectMetrics,
		OnRequest:      idle.activity,
		UI:             panel.UI{},
		Envs:           m.store,
		RotateEnvKey:   envKeyRotation(m.store, cfg.EnvKeyFilePath()),
		Notify:         notifier.api(m.store),
		Access:         m.store,
		OpenTimeZone:   cfg.OpenTimeZone,
		Scripts:        scriptCfg.Folder,
		Audit:          m.store,
		Interpreters:   scriptCfg.Interpreters,
		Subs:           subsCfg,
		Import:         imports,
	})
	m.server = &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // log follows extend their own deadline
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return runCtx },
	}
	m.serveErr = make(chan error, 1)
	go func() {
		if err := m.server.Serve(m.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.serveErr <- err
		}
		close(m.serveErr)
	}()
	m.printBanner()
	m.started = true
	m.log.Info("ql3-edge started", "version", m.Version, "listen", m.Addr(), "dataDir", cfg.DataDir)
	return nil
}

// Err delivers a fatal error of the HTTP server (the channel closes on
// Close); main waits on it next to its signal context.
func (m *Main) Err() <-chan error { return m.serveErr }

// Addr is the address the API listens on (the real port when Listen asked
// for port 0).
func (m *Main) Addr() string {
	if m.listener == nil {
		return ""
	}
	return m.listener.Addr().String()
}

// NewAdminToken is the plaintext token generated by this Run, "" when the
// token already existed. It is never printed: the banner names its file.
func (m *Main) NewAdminToken() string { return m.token.Plaintext }

func (m *Main) ready(ctx context.Context) error {
	if _, err := m.store.ListTasks(ctx, edgeTaskProbe); err != nil {
		return err
	}
	return m.engine.ready()
}

// printBanner tells the operator where things are. It never prints the
// token: stdout of a service ends up in the journal (systemd, procd), so
// the token lives only in its 0600 file and the banner says where (#27).
func (m *Main) printBanner() {
	w := m.Stdout
	addr := m.Addr()
	fmt.Fprintf(w, "ql3-edge %s\n", m.Version)
	fmt.Fprintf(w, "  API and panel: %s://%s/\n", m.scheme(), addr)
	fmt.Fprintf(w, "  data:          %s\n", m.Config.DataDir)
	switch {
	case m.Config.NoAuth:
		fmt.Fprintf(w, "  auth:          disabled (--no-auth; loopback only)\n")
	case m.token.Plaintext != "":
		fmt.Fprintf(w, "  admin token:   new, written to %s (mode 0600; only its SHA-256 is kept)\n", filepath.Join(m.Config.DataDir, TokenFileName))
	default:
		fmt.Fprintf(w, "  admin token:   in %s\n", filepath.Join(m.Config.DataDir, TokenFileName))
	}
	prog := m.Program
	if prog == "" {
		prog = "ql3-edge"
	}
	fmt.Fprintf(w, "\nAdd a first task (from this directory, in another terminal):\n")
	if m.scheme() == "https" {
		addr = "https://" + addr
	}
	fmt.Fprintf(w, "  %s task add --addr %s --data-dir %s --name hello --cron '*/10 * * * * *' -- echo hello\n", prog, addr, m.Config.DataDir)
	fmt.Fprintf(w, "  %s run list --addr %s --task hello\n", prog, addr)
	fmt.Fprintf(w, "  %s logs --addr %s <run id> -f\n\n", prog, addr)
}

// scheme is the API's URL scheme.
func (m *Main) scheme() string {
	if m.Config.TLSCert != "" {
		return "https"
	}
	return "http"
}

// sweepRetention applies retention at start and then every hour: logs by
// age and total size, and finished runs (with their attempts and events)
// older than the same retention, so an every-second task does not grow the
// database without bound on a small device.
func (m *Main) sweepRetention(ctx context.Context) {
	for {
		now := m.Clock.Now()
		res, err := m.logs.Sweep(now)
		if err != nil {
			m.log.Warn("log retention sweep failed", "err", err)
		} else if res.RemovedLogs > 0 {
			m.log.Info("log retention", "removed", res.RemovedLogs, "freedBytes", res.FreedBytes)
		}
		cutoff := now.Add(-time.Duration(m.Config.LogRetentionHours) * time.Hour).UnixMilli()
		if pruned, err := m.pruneRuns(ctx, cutoff); err != nil {
			m.log.Warn("run retention sweep failed", "err", err)
		} else if pruned > 0 {
			m.log.Info("run retention", "removedRuns", pruned)
		}
		m.pruneAudit(ctx, now)     // envkey.go
		m.pruneNotify(ctx, cutoff) // notify.go
		t := m.Clock.NewTimer(logSweepInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// pruneRuns deletes finished runs older than cutoffMs in bounded batches
// (one short write transaction each, so the scheduler is never starved),
// at most maxPruneBatchesPerSweep per sweep; the next sweep continues.
func (m *Main) pruneRuns(ctx context.Context, cutoffMs int64) (int, error) {
	total := 0
	for range maxPruneBatchesPerSweep {
		n, err := m.store.PruneRuns(ctx, cutoffMs, edge.MaxPruneBatch)
		total += n
		if err != nil || n < edge.MaxPruneBatch {
			return total, err
		}
	}
	return total, nil
}

// Close stops accepting requests, stops the scheduler and the runner, and
// closes the stores. It is safe to call more than once.
func (m *Main) Close() error {
	m.closeOnce.Do(func() {
		var errList []error
		if m.server != nil {
			ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
			if err := m.server.Shutdown(ctx); err != nil {
				errList = append(errList, fmt.Errorf("http shutdown: %w", err))
				_ = m.server.Close()
			}
			cancel()
		} else if m.listener != nil {
			_ = m.listener.Close()
		}
		if m.cancel != nil {
			m.cancel()
		}
		if m.engine != nil {
			if err := m.engine.stop(); err != nil {
				errList = append(errList, err)
			}
		}
		m.wg.Wait()
		if m.store != nil {
			if err := m.store.Close(); err != nil {
				errList = append(errList, fmt.Errorf("closing the database: %w", err))
			}
		}
		// The lock goes last: nothing of this server touches the data
		// directory any more.
		if err := m.lock.release(); err != nil {
			errList = append(errList, fmt.Errorf("releasing the data directory lock: %w", err))
		}
		m.closeErr = errors.Join(errList...)
		if m.log != nil && m.started {
			m.log.Info("ql3-edge stopped", "err", m.closeErr)
		}
	})
	return m.closeErr
}

// openScripts opens <data dir>/scripts and writes the `task` helper into
// <data dir>/bin for this start's interpreter table (ADR 0044).
func (m *Main) openScripts(cfg Config) (*runner.Scripts, error) {
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	folder, err := scripts.Open(filepath.Join(dataDir, ScriptsDirName))
	if err != nil {
		return nil, err
	}
	interps, err := cfg.InterpreterTable()
	if err != nil {
		return nil, err
	}
	argv := m.HelperArgv
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("task helper: %w", err)
		}
		argv = []string{exe, scripts.HelperSubcommand}
	}
	bin := filepath.Join(dataDir, BinDirName)
	if _, err := scripts.WriteHelper(bin, argv, folder.Root(), cfg.InterpreterOverrides()); err != nil {
		return nil, err
	}
	return &runner.Scripts{Folder: folder, Interpreters: interps, BinDir: bin, PathDirs: []string{pythonBin(dataDir)}}, nil
}
