package app

import (
	"context"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge/deps"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/runner"
	"github.com/ql3/ql3/edge/subs"
)

// Where subscriptions and dependencies keep their files, under the data
// directory (ADR 0054, ADR 0055).
const (
	SubsDirName   = "subs"        // git caches, stages and the previous trees
	PythonDirName = "deps/python" // the python dependencies' venv
)

// pythonBin is the venv's bin folder: it follows the task helper at the
// head of every process's PATH, so python3 there sees the installed packages.
func pythonBin(dataDir string) string { return filepath.Join(dataDir, PythonDirName, "bin") }

// newSubs wires subscriptions and dependencies and publishes the system
// task of every subscription (the program's path may have changed, an
// import may have added subscriptions).
func (m *Main) newSubs(ctx context.Context, sc *runner.Scripts, n *notifyParts) (*httpapi.SubsConfig, error) {
	dataDir, err := filepath.Abs(m.Config.DataDir)
	if err != nil {
		return nil, err
	}
	exe := ""
	if len(m.HelperArgv) > 0 {
		exe = m.HelperArgv[0]
	} else if exe, err = os.Executable(); err != nil {
		return nil, err
	}
	sv := subs.New(subs.Config{Store: m.store, ScriptsRoot: sc.Folder.Root(), WorkDir: filepath.Join(dataDir, SubsDirName), Exe: exe,
		Credential: func(ctx context.Context, name string) (string, error) {
			entries, err := m.store.EnabledEnvs(ctx)
			if err != nil {
				return "", err
			}
			for _, e := range entries {
				if e.Name == name {
					return e.Value, nil
				}
			}
			return "", errs.NotFoundf("no enabled env store entry is named %s", name)
		}})
	if err := sv.EnsureAll(ctx); err != nil {
		return nil, err
	}
	dv := deps.New(deps.Config{Store: m.store, Places: deps.Places{ScriptsRoot: sc.Folder.Root(), PythonVenv: filepath.Join(dataDir, PythonDirName)}})
	return &httpapi.SubsConfig{Store: m.store, Subs: sv, Deps: dv, Tokens: n.tokens}, nil
}
