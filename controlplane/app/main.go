// Package app is ql3-control's program: configuration, subcommands and the
// wiring of the admin API server. cmd/ql3-control only calls it; tests
// drive the same Main end to end.
//
//	ql3-control migrate                       create roles, apply migrations, install grants
//	ql3-control serve                         run the admin API (127.0.0.1:5800)
//	ql3-control token create --name N [--ttl D]   print a new API token once
//	ql3-control token list | token revoke --id ID
//	ql3-control project create|list|get|archive   (package cli: HTTP client of the admin API)
//	ql3-control task list|get|create|update|enable|disable
//	ql3-control trigger list|get|create|update
//	ql3-control worker register|list|get|credentials|issue-credential|rotate-credentials|revoke-credential
//	ql3-control pki init|issue-server|issue-worker   dev PKI for the worker ingress (pki.go)
//	ql3-control version
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/cli"
	"github.com/ql3/ql3/controlplane/coordinator"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/core/errs"
)

// ErrUsage marks command-line mistakes (exit status 2).
var ErrUsage = errors.New("usage error")

// Main is one invocation of ql3-control.
type Main struct {
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  func(string) string
	Version string

	// Config is the effective configuration after ParseFlags.
	Config Config

	command string
	cmd     command
	args    cmdArgs
	log     *slog.Logger

	mu          sync.Mutex
	adminPool   *pgxpool.Pool
	runtimePool *pgxpool.Pool
	subsStop    func() // the subscription executor (subs.go)
	coord       *coordinator.Coordinator
	// noMetricsSettle makes the finished-Run counter read up to the
	// database's now instead of postgres.FinishedRunsSettleMs behind it
	// (tests that scrape right after their Runs finish).
	noMetricsSettle bool
	server          *http.Server
	listener        net.Listener
	serveErr        chan error
	ingress         ingressParts
	envs            *envstore.Store // the env store serve opened (envkeys.go)
	notify          notifyParts
}

// NewMain returns a Main wired to the process's stdio and environment.
func NewMain() *Main {
	return &Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Version: "dev"}
}

// command is one subcommand: its flags, what it does, and how it prints
// its answer (package cli).
type command struct {
	summary string
	scope   settingScope // which shared settings it takes as flags
	flags   func(fs *flag.FlagSet, a *cmdArgs)
	run     func(m *Main, ctx context.Context) error
	// print is the text form of the answer; with it the command takes
	// --json, which prints the answer's JSON instead.
	print cli.Printer
	// outcome, when set, decides the exit status from the answer.
	outcome func(data []byte) error
}

func commands() map[string]command {
	cmds := map[string]command{
		"version": {summary: "print the version", run: func(m *Main, _ context.Context) error {
			_, err := fmt.Fprintf(m.Stdout, "ql3-control %s\n", m.Version)
			return err
		}},
		"migrate": {summary: "create the roles, apply migrations, install grants", scope: forMigrate, run: (*Main).migrate},
		"serve":   {summary: "run the admin API", scope: forServe, run: (*Main).serve},
	}
	for name, c := range envKeyCommands() {
		cmds[name] = c
	}
	for name, c := range pkiCommands() {
		cmds[name] = c // no shared settings: no database, no server
	}
	for name, c := range accessCommands() { // token and user commands (access.go)
		if c.scope == 0 {
			c.scope = forDatabase
		}
		cmds[name] = c
	}
	for name, c := range clientCommands() {
		cmds[name] = c
	}
	for name, p := range cli.Printers() { // the token commands' answers print as the client's do
		if c, ok := cmds[name]; ok && c.print == nil {
			c.print = p
			cmds[name] = c
		}
	}
	return cmds
}

// ParseFlags selects the subcommand from args (without the program name)
// and builds the configuration: defaults, config file, QL3_* environment,
// flags.
func (m *Main) ParseFlags(args []string) error {
	if m.Getenv == nil {
		m.Getenv = os.Getenv
	}
	cmds := commands()
	name, rest := commandName(args, cmds)
	if name == "" {
		return m.noCommand(args, cmds)
	}
	m.command, m.cmd = name, cmds[name]
	fs := flag.NewFlagSet("ql3-control "+name, flag.ContinueOnError)
	// The flag package's own messages write "-name"; its errors come back
	// here and are reported once, with "--name", by the caller. Help asked
	// for goes to stdout, help after a mistake to stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cfg := DefaultConfig()
	raw := map[string]string{}
	var configPath string
	if m.cmd.scope != 0 {
		fs.StringVar(&configPath, "config", "", "JSON config file")
	}
	registerSettings(fs, &cfg, m.cmd.scope, raw)
	if m.cmd.flags != nil {
		m.cmd.flags(fs, &m.args)
	}
	if m.cmd.print != nil {
		fs.BoolVar(&m.args.client.JSON, "json", false, "print the admin API's JSON answer instead of text")
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(m.Stdout, fs, name, m.cmd)
			return err
		}
		printUsage(m.Stderr, fs, name, m.cmd)
		return fmt.Errorf("%w: %s", ErrUsage, doubleDash(err))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if configPath == "" {
		configPath = m.Getenv("QL3_CONFIG")
	}
	if configPath != "" {
		if err := loadConfigFile(configPath, &cfg); err != nil {
			return err
		}
	}
	if err := cfg.applyEnv(m.Getenv); err != nil {
		return err
	}
	for _, s := range cfg.settings() {
		if v, ok := raw[s.flag]; ok {
			if err := s.set("--"+s.flag, v); err != nil {
				return err
			}
		}
	}
	m.Config = cfg
	return nil
}

// commandName finds the longest known command ("token create" before
// "token") at the start of args.
func commandName(args []string, cmds map[string]command) (string, []string) {
	if len(args) >= 2 {
		if _, ok := cmds[args[0]+" "+args[1]]; ok {
			return args[0] + " " + args[1], args[2:]
		}
	}
	if len(args) >= 1 {
		if _, ok := cmds[args[0]]; ok {
			return args[0], args[1:]
		}
	}
	return "", nil
}

// noCommand answers a command line that names no command: the global
// help, or a group's ("pki", "run") when args start with one. Help asked
// for (help, -h, --help) goes to stdout and is no error; otherwise it goes
// to stderr with a usage error.
func (m *Main) noCommand(args []string, cmds map[string]command) error {
	isHelp := func(s string) bool { return s == "help" || s == "-h" || s == "-help" || s == "--help" }
	group := ""
	if len(args) > 0 && !isHelp(args[0]) {
		for n := range cmds {
			if strings.HasPrefix(n, args[0]+" ") {
				group = args[0]
				break
			}
		}
	}
	asked := len(args) > 0 && isHelp(args[len(args)-1]) && (group == "" && len(args) == 1 || group != "" && len(args) == 2)
	w := m.Stderr
	if asked {
		w = m.Stdout
	}
	m.usage(w, cmds, group)
	switch {
	case asked:
		return flag.ErrHelp
	case len(args) == 0:
		return fmt.Errorf("%w: no command given", ErrUsage)
	case group != "" && len(args) == 1:
		return fmt.Errorf("%w: %s needs a subcommand", ErrUsage, group)
	}
	return fmt.Errorf("%w: unknown command %q", ErrUsage, strings.Join(args[:min(len(args), 2)], " "))
}

// usage lists the commands (of group, or all), then the exit statuses.
func (m *Main) usage(w io.Writer, cmds map[string]command, group string) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		if group == "" || strings.HasPrefix(n, group+" ") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if group == "" {
		fmt.Fprintln(w, "usage: ql3-control <command> [flags]   (ql3-control <command> -h for its flags)")
	} else {
		fmt.Fprintf(w, "usage: ql3-control %s <command> [flags]   (ql3-control %s <command> -h for its flags)\n", group, group)
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-30s %s\n", n, cmds[n].summary)
	}
	if group == "" {
		fmt.Fprintln(w, "\nclient commands print text (tables for lists); --json prints the admin API's JSON answer.")
	}
	fmt.Fprint(w, "\n"+exitStatusHelp)
}

// Run executes the subcommand. serve returns once the API is listening
// (Addr); the caller waits for a signal and then calls Close.
func (m *Main) Run(ctx context.Context) error {
	if m.cmd.run == nil {
		return fmt.Errorf("%w: ParseFlags was not called", ErrUsage)
	}
	level := slog.LevelInfo
	if err := level.UnmarshalText([]byte(m.Config.LogLevel)); err != nil {
		return errs.Invalidf("log-level", "must be debug, info, warn or error, got %.16q", m.Config.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(m.Config.LogFormat) {
	case "", "json":
		m.log = slog.New(slog.NewJSONHandler(m.Stderr, opts))
	case "text":
		m.log = slog.New(slog.NewTextHandler(m.Stderr, opts))
	default:
		return errs.Invalidf("log-format", "must be text or json, got %.16q", m.Config.LogFormat)
	}
	return m.cmd.run(m, ctx)
}

// Serving reports whether Run started a server that Close must stop.
func (m *Main) Serving() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.server != nil
}

// Err delivers a server failure after Run (nil channel when not serving).
func (m *Main) Err() <-chan error { return m.serveErr }

// Addr is the admin API's listen address once serving ("" before).
func (m *Main) Addr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listener == nil {
		return ""
	}
	return m.listener.Addr().String()
}

// shutdownTimeout bounds a graceful stop (DESIGN.md: stop waits ≤ 10 s).
const shutdownTimeout = 10 * time.Second

// Close stops the server (in-flight requests get up to 10 s) and closes the
// pools. It is safe to call more than once and after a one-shot command.
func (m *Main) Close() error {
	m.mu.Lock()
	srv, coord, pools := m.server, m.coord, []*pgxpool.Pool{m.adminPool, m.runtimePool}
	m.server, m.coord, m.adminPool, m.runtimePool = nil, nil, nil, nil
	m.mu.Unlock()
	// Reverse of the start order: HTTP admission closes first, then the
	// worker ingress, then the scheduler drains its round (at most its stop
	// timeout), then pools.
	var errList []error
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if srv != nil {
		if serr := srv.Shutdown(ctx); serr != nil {
			errList = append(errList, fmt.Errorf("stop admin API: %w", serr))
			_ = srv.Close()
		}
	}
	if ierr := m.stopIngress(ctx); ierr != nil {
		errList = append(errList, ierr)
	}
	m.stopNotify()
	m.stopSubs()
	if coord != nil {
		if cerr := coord.Stop(context.Background()); cerr != nil {
			errList = append(errList, fmt.Errorf("stop scheduler: %w", cerr))
		}
		m.log.Info("cluster scheduler stopped", "owner", coord.Owner(), "counters", coord.Metrics().Summary())
	}
	for _, pool := range pools {
		if pool != nil {
			pool.Close()
		}
	}
	return errors.Join(errList...)
}

// openRolePool opens and pings a pool that connects as role.
func (m *Main) openRolePool(ctx context.Context, role, appName string) (*pgxpool.Pool, error) {
	if err := m.Config.validatePool(); err != nil {
		return nil, err
	}
	return m.openRolePoolSized(ctx, role, appName, int32(m.Config.MaxConns))
}

// openRolePoolSized opens and pings a pool of at most maxConns connections.
func (m *Main) openRolePoolSized(ctx context.Context, role, appName string, maxConns int32) (*pgxpool.Pool, error) {
	dsn, err := m.Config.roleDSN(role)
	if err != nil {
		return nil, err
	}
	pool, err := postgres.NewPool(ctx, postgres.PoolConfig{DSN: dsn, ExpectRole: role,
		MaxConns: maxConns, ApplicationName: appName})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect as %s: %w", role, postgres.Translate(err))
	}
	return pool, nil
}

// openAdminPool opens the admin pool and keeps it for Close.
func (m *Main) openAdminPool(ctx context.Context) (*pgxpool.Pool, error) {
	pool, err := m.openRolePool(ctx, postgres.RoleAdmin, "ql3-control admin")
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.adminPool = pool
	m.mu.Unlock()
	return pool, nil
}
