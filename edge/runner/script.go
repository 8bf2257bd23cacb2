package runner

import (
	"os"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/worker/executor"
)

// Scripts is what the runner needs for script tasks and the `task`
// helper (ADR 0044).
type Scripts struct {
	Folder       *scripts.Folder
	Interpreters scriptpath.Interpreters
	// BinDir holds the `task` helper (scripts.WriteHelper); it is put
	// first on the PATH of every process the runner starts.
	BinDir string
	// PathDirs follow BinDir at the head of that PATH (the python
	// dependencies' venv bin folder, ADR 0055).
	PathDirs []string
}

// fallbackPath is the PATH of a process when the server has none.
const fallbackPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// prepareScript fills the parts of req that come from the scripts
// folder: the helper on the PATH and QL3_SCRIPTS_DIR for every process,
// and for a script task its command (interpreter by extension, the
// script's folder as working directory, QL3_SCRIPT). It returns the tree
// digest of the script's folder (what the attempt starts from; "" for
// other tasks). An error is a start failure: a script that is missing, a
// link, or has no interpreter here, named.
func (r *Runner) prepareScript(req *executor.Request, c edge.Claim) (string, error) {
	sc := c.Revision.Spec.Script
	cfg := r.cfg.Scripts
	if cfg == nil {
		if sc != nil {
			return "", errs.Invalidf("script", "this ql3-edge has no scripts folder")
		}
		return "", nil
	}
	env := make(map[string]string, len(req.Spec.Env)+1)
	for k, v := range req.Spec.Env {
		env[k] = v
	}
	path := env["PATH"]
	if path == "" {
		path = os.Getenv("PATH")
	}
	if path == "" {
		path = fallbackPath
	}
	head := cfg.PathDirs
	if cfg.BinDir != "" {
		head = append([]string{cfg.BinDir}, head...)
	}
	if h := strings.Join(head, ":"); h != "" && !strings.HasPrefix(path, h+":") {
		path = h + ":" + path
	}
	env["PATH"] = path
	req.Spec.Env = env
	if req.ExtraEnv == nil {
		req.ExtraEnv = map[string]string{}
	}
	req.ExtraEnv["QL3_SCRIPTS_DIR"] = cfg.Folder.Root()
	if sc == nil {
		return "", nil
	}
	cmd, err := cfg.Folder.Command(cfg.Interpreters, sc.File, sc.Args, path)
	if err != nil {
		return "", err
	}
	_, tree, err := cfg.Folder.Tree(scriptpath.Dir(cmd.Script))
	if err != nil {
		return "", err
	}
	req.Spec.Argv, req.Spec.ShellCommand, req.Spec.WorkDir = cmd.Argv, "", cmd.Dir
	req.ExtraEnv["QL3_SCRIPT"] = cmd.Script
	return tree.String(), nil
}
