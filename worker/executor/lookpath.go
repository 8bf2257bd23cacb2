package executor

import (
	"os"
	"path/filepath"
	"strings"
)

// LookInterpreter returns the first of progs that exists: a path (with a
// '/') must be an executable regular file; a name is searched in the PATH
// list pathEnv (absolute elements only: a relative one would depend on the
// working directory). Both binaries resolve a script's interpreter with it
// (ADR 0044, ADR 0052).
func LookInterpreter(progs []string, pathEnv string) (string, bool) {
	for _, p := range progs {
		if found, ok := lookPath(p, pathEnv); ok {
			return found, true
		}
	}
	return "", false
}

func lookPath(prog, pathEnv string) (string, bool) {
	if strings.Contains(prog, "/") {
		return prog, executable(prog)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, prog)
		if executable(p) {
			return p, true
		}
	}
	return "", false
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
