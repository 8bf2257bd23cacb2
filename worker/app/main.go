package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
	"github.com/ql3/ql3/worker/identity"
	"github.com/ql3/ql3/worker/journal"
	"github.com/ql3/ql3/worker/scriptcache"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // a journal failure, or the second signal
	ExitUsage  = 2
)

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("logLevel: must be debug, info, warn or error, got %q", s)
}

// newLogger returns the process logger; format was checked by Validate.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Main runs ql3-worker with args (without the program name) and returns
// the exit code.
func Main(version string, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("ql3-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "JSON config file (env QL3_CONFIG)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	cfg := DefaultConfig()
	applyFlags := cfg.RegisterFlags(fs)
	fs.Usage = func() { printUsage(fs.Output(), fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK // help asked for
		}
		return ExitUsage
	}
	if *showVersion {
		fmt.Fprintf(stderr, "ql3-worker %s %s/%s\n", version, runtime.GOOS, runtime.GOARCH)
		return ExitOK
	}
	if *configPath == "" {
		*configPath = getenv("QL3_CONFIG")
	}
	if *configPath != "" {
		if err := cfg.LoadFile(*configPath); err != nil {
			fmt.Fprintln(stderr, "ql3-worker:", err)
			return ExitUsage
		}
	}
	if err := cfg.ApplyEnv(getenv); err != nil {
		fmt.Fprintln(stderr, "ql3-worker:", err)
		return ExitUsage
	}
	if err := applyFlags(); err != nil {
		fmt.Fprintln(stderr, "ql3-worker:", err)
		return ExitUsage
	}
	set, err := cfg.Validate()
	if err != nil {
		fmt.Fprintln(stderr, "ql3-worker:", err)
		return ExitUsage
	}
	level, _ := parseLevel(cfg.LogLevel)
	log := newLogger(stderr, level, cfg.LogFormat)
	if err := run(version, cfg, set, log); err != nil {
		log.Error("ql3-worker stopped", "err", err)
		return ExitFailed
	}
	return ExitOK
}

func run(version string, cfg Config, set Settings, log *slog.Logger) error {
	// Signals are ours before anything is started: the first SIGTERM or
	// SIGINT drains, the second kills the children and exits.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	// A router has 64–256 MiB for everything: unless the operator set
	// GOMEMLIMIT, the router profile asks the GC to keep the Go heap near
	// routerMemoryLimit (a soft limit: a larger live heap still works, the
	// GC just runs more often). Measured in scripts/bench/worker.sh.
	if os.Getenv("GOMEMLIMIT") == "" && (cfg.Profile == "" || cfg.Profile == "router") {
		debug.SetMemoryLimit(routerMemoryLimit)
	}
	ident, err := identity.NewProvider(identity.Paths{
		Credential: cfg.CredentialFile, Cert: cfg.CertFile, Key: cfg.KeyFile, CABundle: cfg.CAFile,
	}, log)
	if err != nil {
		return err
	}
	j, err := journal.Open(cfg.StateDir, set.InboxMax, nil)
	if err != nil {
		return err
	}
	defer j.Close()
	cacheBytes := int64(scriptcache.DefaultMaxBytes)
	if cfg.Profile == "" || cfg.Profile == "router" {
		cacheBytes = scriptcache.RouterMaxBytes
	}
	if set.Agent.Scripts, err = scriptcache.Open(filepath.Join(cfg.StateDir, "scripts"), scriptcache.Options{MaxBytes: cacheBytes}); err != nil {
		return err
	}
	set.Agent.DepsRoot = filepath.Join(cfg.StateDir, "deps")
	killGrace := set.Agent.KillGrace
	if killGrace == 0 {
		killGrace = agent.DefaultKillGrace
	}
	set.Agent.KillGrace = killGrace
	exe, err := executor.New(executor.Config{
		WorkRoot: set.WorkDir, MaxConcurrent: set.Agent.Capacity, KillGrace: killGrace,
		Clock: clock.Real{}, Logger: log,
	})
	if err != nil {
		return err
	}
	c, err := client.New(client.Config{BaseURL: cfg.IngressURL, ServerName: cfg.ServerName,
		Timeout: set.RequestTimeout, Identity: ident, Logger: log})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set.Agent.Capabilities = agent.ProbeCapabilities(ctx, cfg.Labels)
	set.Agent.AgentVersion = agentVersion(version)
	set.Agent.Logger = log
	set.Agent.Clock = clock.Real{}
	deps := agent.Deps{
		Journal: j, Client: c, Runner: agent.ExecRunner{E: exe},
		CredentialID: func() (string, error) {
			cr, err := ident.Credential()
			return cr.ID, err
		},
	}
	deps.Notify = startNotifyRelay(c, log) // notify.go
	a, err := agent.New(set.Agent, deps)
	if err != nil {
		return err
	}
	go func() {
		n := 0
		for s := range sigs {
			n++
			if n == 1 {
				log.Info("signal: draining (send it again to kill running work and exit)", "signal", s.String())
				a.Drain()
				continue
			}
			log.Warn("second signal: killing running work and exiting", "signal", s.String())
			cancel()
			return
		}
	}()
	log.Info("ql3-worker starting", "version", version, "profile", cfg.Profile, "capacity", set.Agent.Capacity)
	err = a.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return errors.New("stopped by a second signal; running work was killed")
	}
	return err
}

// routerMemoryLimit is the router profile's default soft memory limit.
const routerMemoryLimit = 6 << 20

// agentVersion is printable ASCII ≤ 64 bytes for SessionOpen.
func agentVersion(v string) string {
	s := "ql3-worker/" + v + " " + runtime.GOOS + "/" + runtime.GOARCH
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
