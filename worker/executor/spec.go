package executor

import (
	"time"

	"github.com/ql3/ql3/core/spec"
)

// SpecFor maps a task's command spec onto what the executor starts: the
// argv (its file first) or the shell command with its interpreter, the
// spec's environment and working directory, and timeout (the edge passes
// the spec's own timeout; a worker the offer's budget, which is at most
// that). It is the one mapping of both binaries.
func SpecFor(c spec.Command, timeout time.Duration) Spec {
	sp := Spec{Env: c.Environment, WorkDir: c.WorkingDirectory, Timeout: timeout}
	if lim := c.Limits; lim != nil {
		sp.MaxProcesses, sp.MemoryBytes = lim.MaxProcesses, lim.MemoryBytes
	}
	switch {
	case c.Argv != nil:
		sp.Argv = append([]string{c.Argv.File}, c.Argv.Args...)
	case c.Shell != nil:
		sp.ShellCommand, sp.Shell = c.Shell.Command, c.Shell.Shell
	}
	return sp
}
