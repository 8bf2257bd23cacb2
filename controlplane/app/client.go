package app

import (
	"context"
	"flag"
	"time"

	"github.com/ql3/ql3/controlplane/cli"
	"github.com/ql3/ql3/controlplane/postgres"
)

// cmdArgs holds the command-specific flags.
type cmdArgs struct {
	client   cli.Args      // client commands, and --json (package cli)
	name, id string        // token commands (serve.go)
	ttl      time.Duration // token create
	pki      pkiArgs       // pki commands (pki.go)
	envKey   envKeyArgs    // env key commands (envkeys.go)
	access   accessArgs    // token scopes and user commands (access.go)
}

// ErrRunSkipped is what `run now` returns when the task's concurrency
// policy did not start the Run: main exits ExitRunSkipped.
var ErrRunSkipped = cli.ErrRunSkipped

// Exit statuses of ql3-control (its usage lists them).
const (
	ExitOK         = 0
	ExitError      = 1
	ExitUsage      = 2 // a command-line mistake or input the server refused as invalid
	ExitRunSkipped = 8 // run now: not started because of the task's concurrency policy
)

const exitStatusHelp = `exit status: 0 ok, 1 error, 2 usage or invalid input,
  8 run now: the Run was skipped by the task's concurrency policy (forbid, another Run active)
`

// clientCommands are package cli's commands as subcommands of Main: they
// take the client settings and run with the Client the app fills.
func clientCommands() map[string]command {
	cmds := map[string]command{}
	for name, c := range cli.Commands() {
		cmd := command{summary: c.Summary, scope: forClient, print: c.Print, outcome: c.Outcome,
			run: func(m *Main, ctx context.Context) error { return c.Run(m.client(), ctx) }}
		if c.Flags != nil {
			cmd.flags = func(fs *flag.FlagSet, a *cmdArgs) { c.Flags(fs, &a.client) }
		}
		cmds[name] = cmd
	}
	return cmds
}

// client is the cli.Client of this invocation: its output, settings and
// flags.
func (m *Main) client() *cli.Client {
	return &cli.Client{Stdout: m.Stdout, Getenv: m.Getenv,
		Server: m.Config.Server, TokenFile: m.Config.TokenFile, CAFile: m.Config.CAFile, Insecure: m.Config.Insecure,
		CheckToken: func(tok string) error { _, _, err := postgres.ParseAPIToken(tok); return err },
		Args:       m.args.client, Print: m.cmd.print, Outcome: m.cmd.outcome}
}

// outputValue prints a value the command read itself (not through the
// admin API) as the client commands print an answer.
func (m *Main) outputValue(v any) error { return m.client().OutputValue(v) }
