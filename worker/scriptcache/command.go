package scriptcache

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/worker/executor"
)

// Command is how a script of a verified tree starts: the interpreter its
// extension names (the first of interps' programs found; nil interps are
// the defaults) with the script's absolute path and args, from the tree's
// root — the tree is the script's folder, so its siblings are beside it.
// A missing interpreter is an error that names it.
func Command(interps scriptpath.Interpreters, root, file string, args []string, pathEnv string) (argv []string, dir string, err error) {
	if interps == nil {
		interps = scriptpath.DefaultInterpreters
	}
	progs, err := interps.For("script.file", file)
	if err != nil {
		return nil, "", err
	}
	interp, ok := executor.LookInterpreter(progs, pathEnv)
	if !ok {
		return nil, "", fmt.Errorf("no interpreter for %q: %s not found on this worker (PATH=%s)", file, strings.Join(progs, " or "), pathEnv)
	}
	return append([]string{interp, filepath.Join(root, scriptpath.Base(file))}, args...), root, nil
}
