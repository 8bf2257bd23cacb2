package scripts

import (
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/worker/executor"
)

// Command is how a script of the folder is started: the interpreter its
// extension names with the script's absolute path and the arguments, from
// the script's own folder (so require('./utils') and `import utils` find
// their siblings).
type Command struct {
	Script string   // the cleaned path inside the folder (QL3_SCRIPT)
	Argv   []string // interpreter, script path, args…
	Dir    string   // the script's folder on disk
}

// Command resolves file (a path inside the folder) to the command that
// runs it: the file must be a regular file reached without a link; the
// interpreter is the first program of interps' list for its extension
// that exists — a name is looked up in pathEnv, a path must be an
// executable file. A missing interpreter is an error that names it.
func (f *Folder) Command(interps scriptpath.Interpreters, file string, args []string, pathEnv string) (Command, error) {
	c, _, err := clean("script.file", file, false)
	if err != nil {
		return Command{}, err
	}
	e, err := f.Stat(c)
	if errs.Code(err) == errs.NotFound {
		return Command{}, errs.NotFoundf("script %q is not in the scripts folder (%s)", c, f.root)
	}
	if err != nil {
		return Command{}, err
	}
	if e.Kind != KindFile {
		return Command{}, errs.Invalidf("script.file", "%q is a folder, not a script", c)
	}
	progs, err := interps.For("script.file", c)
	if err != nil {
		return Command{}, err
	}
	interp, ok := executor.LookInterpreter(progs, pathEnv)
	if !ok {
		ext := filepath.Ext(c)
		return Command{}, errs.Invalidf("interpreter", "no interpreter for %q: %s not found (PATH=%s); install it or name one with --interpreter %s=/path/to/program",
			c, strings.Join(progs, " or "), pathEnv, strings.ToLower(ext))
	}
	abs := filepath.Join(f.root, filepath.FromSlash(c))
	return Command{
		Script: c,
		Argv:   append([]string{interp, abs}, args...),
		Dir:    filepath.Dir(abs),
	}, nil
}
