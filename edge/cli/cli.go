// Package cli is ql3-edge's command line: `serve` starts the server (see
// edge/app); every other command talks to a running server's HTTP API.
//
// Exit codes (stable; scripts may rely on them):
//
//	0  success
//	1  error (including input the server rejected as invalid)
//	2  usage: unknown command, bad flags or arguments
//	3  not found
//	4  conflict (stale expectedRevision, finished run, duplicate name)
//	5  unauthorized or forbidden (missing or wrong admin token)
//	6  server unreachable or unavailable
//	7  `run now --wait`: the run ended without succeeding
//	8  `run now`: the run was not started because of the task's concurrency
//	   policy (skipped: forbid, another run of the task is active)
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge/scripts"
)

// Exit codes.
const (
	ExitOK           = 0
	ExitError        = 1
	ExitUsage        = 2
	ExitNotFound     = 3
	ExitConflict     = 4
	ExitUnauthorized = 5
	ExitUnavailable  = 6
	ExitRunFailed    = 7
	ExitRunSkipped   = 8
)

// Env is the process environment a command runs in; tests substitute it.
type Env struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  func(string) string
	Version string
	Program string // how the user invoked the binary (os.Args[0])
	// StopNow is closed by main on a second SIGTERM/SIGINT: `serve` then
	// ends its drain at once (nil: no second signal is awaited).
	StopNow <-chan struct{}
}

// StdEnv is the real process environment.
func StdEnv(version string) Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Version: version, Program: os.Args[0]}
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// runFailedError is `run now --wait` seeing a run end unsuccessfully.
type runFailedError struct{ id, status string }

func (e *runFailedError) Error() string { return fmt.Sprintf("run %s ended %s", e.id, e.status) }

// skippedError is `run now` admitted as skipped by the concurrency policy;
// the result line is already printed.
type skippedError struct{ id, reason string }

func (e *skippedError) Error() string { return fmt.Sprintf("run %s skipped: %s", e.id, e.reason) }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "start the scheduler, the runner and the HTTP API", serveCmd},
		{"task", "add, list, show, edit, enable, disable or remove tasks", taskCmd},
		{"run", "run a task now; list, show or cancel runs", runCmd},
		{"logs", "print (or follow with -f) the output of a run", logsCmd},
		{"env", "the env store: list, add, edit, rm, enable, disable, import, export", envCmd},
		{"notify", "notifications: channel, rule, test, deliveries", notifyCmd},
		{"token", "scoped API tokens: list, create, revoke", tokenCmd},
		{"app", "QingLong Open API apps: list, create, rm", appCmd},
		{"user", "panel accounts: list, add, passwd, rm, second factor, sign-in log", userCmd},
		{"script", "the scripts folder: ls, cat, put, mv, rm, mkdir, upload, run", scriptCmd},
		{"sub", "subscriptions: list, add, rm, pull, preview", subCmd},
		{"dep", "dependencies: list, add, install, reinstall, remove, cancel, settings", depCmd},
		{"import", "move a QingLong 2 installation in: inspect, apply", importCmd},
		{"version", "print the version", versionCmd},
	}
}

const mainUsage = `ql3-edge schedules and runs commands on this machine.

Usage:
  ql3-edge <command> [flags] [arguments]

Commands:
%s
Run "ql3-edge <command> --help" for the flags of a command.

Client commands find the server and the admin token through, in order of
precedence: flags, QL3_ADDR / QL3_TOKEN / QL3_TOKEN_FILE / QL3_DATA_DIR, the
config file (--config or QL3_CONFIG, JSON), defaults (127.0.0.1:5700 and
<data dir>/admin.token, data dir ./data).

Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 conflict,
5 unauthorized, 6 server unreachable/unavailable, 7 run did not succeed (run now --wait),
8 run skipped by the task's concurrency policy (run now).
`

func printMainUsage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, mainUsage, b.String())
}

// Run executes the command line args (without the program name) and
// returns the process exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		printMainUsage(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case scripts.HelperSubcommand: // the `task` helper on every process's PATH (not listed)
		return scripts.TaskMain(args[1:], env.Stderr)
	case "-h", "-help", "--help", "help":
		printMainUsage(env.Stdout)
		return ExitOK
	case "-version", "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name {
			return report(env, c.run(ctx, env, args[1:]))
		}
	}
	fmt.Fprintf(env.Stderr, "ql3-edge: unknown command %q\n\n", name)
	printMainUsage(env.Stderr)
	return ExitUsage
}

// report prints err and maps it to an exit code.
func report(env Env, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	code := ExitCode(err)
	if code == ExitRunSkipped {
		return code // the result line said it
	}
	var ce *errs.Error
	if errors.As(err, &ce) && ce.Field != "" {
		fmt.Fprintf(env.Stderr, "ql3-edge: %s (field %s)\n", ce.Message, ce.Field)
	} else {
		fmt.Fprintf(env.Stderr, "ql3-edge: %v\n", err)
	}
	if code == ExitUnauthorized {
		fmt.Fprintln(env.Stderr, "hint: the admin token is in <data dir>/admin.token; pass --token-file, --data-dir or QL3_TOKEN")
	}
	return code
}

// ExitCode maps an error to the documented exit code.
func ExitCode(err error) int {
	var ue *usageError
	var rf *runFailedError
	var un *unreachableError
	var sk *skippedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &sk):
		return ExitRunSkipped
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &rf):
		return ExitRunFailed
	case errors.As(err, &un):
		return ExitUnavailable
	}
	switch errs.Code(err) {
	case errs.NotFound:
		return ExitNotFound
	case errs.Conflict:
		return ExitConflict
	case errs.Unauthorized, errs.Forbidden:
		return ExitUnauthorized
	case errs.Unavailable:
		return ExitUnavailable
	}
	return ExitError
}

func versionCmd(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "version", "", "Print the version of this binary.")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintf(env.Stdout, "ql3-edge %s\n", env.Version)
	return nil
}

// newFlagSet returns a flag set whose --help prints synopsis and the flags.
func newFlagSet(env Env, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("ql3-edge "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: ql3-edge %s %s\n\n%s\n", name, synopsis, about)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(out, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args; --help prints to stdout's writer and returns
// flag.ErrHelp (exit 0); other flag errors are usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return &usageError{err.Error()}
	}
	return nil
}
