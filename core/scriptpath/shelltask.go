package scriptpath

import (
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// ShellTask reads a shell task's command as the `task FILE [ARGS]` line
// ql3 runs as a script of the folder: on the edge through the `task`
// helper on every process's PATH, on the cluster by pinning the script's
// tree at publish and running it on the worker like a script task (ADR
// 0052). ok is false when cmd is not a plain task line (another program,
// or a line that needs a shell); err is set when it is one ql3 refuses —
// malformed, or conc/desi — with the message the edge's helper prints.
func ShellTask(cmd string) (tc TaskCommand, ok bool, err error) {
	tc, ok, err = ParseTaskCommand(cmd)
	if ok && err == nil {
		err = tc.Supported()
	}
	return tc, ok, err
}

// RunsAsScript reports whether cmd is a task line ShellTask accepts, and
// reads it, without building refusal messages (the worker and the offer's
// check use it; publishers and the edge's helper use ShellTask).
func RunsAsScript(cmd string) (TaskCommand, bool) {
	tc, ok, err := ParseTaskCommand(cmd)
	return tc, ok && err == nil && tc.runs()
}

// runs: ql3 runs every mode but conc/desi, which start one process per
// account where ql3 starts one per Run.
func (tc TaskCommand) runs() bool { return tc.Mode != "conc" && tc.Mode != "desi" }

// Supported refuses the modes ql3 does not run (conc/desi), naming them.
func (tc TaskCommand) Supported() error {
	if !tc.runs() {
		return errs.Invalidf("command", "%s (one run per account of %s) is not supported by ql3: run the script once (task %s) and let it loop over the accounts, or make one task per account",
			tc.Mode, tc.ModeEnv, tc.File)
	}
	return nil
}

// SplitInterpreters splits a config value of interpreter overrides
// ("EXT=PROGRAM,EXT=PROGRAM", the QL3_INTERPRETERS form of the repeatable
// --interpreter flag) into NewInterpreters' overrides.
func SplitInterpreters(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}
