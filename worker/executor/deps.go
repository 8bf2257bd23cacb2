package executor

import (
	"path/filepath"
	"strings"
)

// The cluster's per-project deps directory (ADR 0062; core/depcmd's
// DepsDirVar, NodeDir and PythonDir, held equal by a test): dependency
// Runs install into it, and every process of the project sees it.
const (
	depsDirVar = "QL3_DEPS_DIR"
	depsNode   = "node"
	depsPython = "python"
)

// DepsPATH is path with the deps directory's python venv bin first.
func DepsPATH(dir, path string) string {
	return filepath.Join(dir, depsPython, "bin") + ":" + path
}

// depsEnv adds a deps directory to env: QL3_DEPS_DIR, the venv's bin at
// the head of PATH (python3 there is the venv's, as on the edge) and its
// node_modules ahead of NODE_PATH (a worker's script tree is read-only and
// elsewhere, so Node's upward search would not find them).
func depsEnv(env map[string]string, dir string) {
	env[depsDirVar] = dir
	env["PATH"] = DepsPATH(dir, env["PATH"])
	np := filepath.Join(dir, depsNode, "node_modules")
	if old := strings.TrimSpace(env["NODE_PATH"]); old != "" {
		np += ":" + old
	}
	env["NODE_PATH"] = np
}
