package executor

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/run"
)

// The worker names the deps directory's parts as core/depcmd's lines do
// (kept as constants here: the worker does not link depcmd's rules).
func TestDepsNamesAreDepcmds(t *testing.T) {
	if depsDirVar != depcmd.DepsDirVar || depsNode != depcmd.NodeDir || depsPython != depcmd.PythonDir {
		t.Fatalf("worker %q %q %q, depcmd %q %q %q", depsDirVar, depsNode, depsPython, depcmd.DepsDirVar, depcmd.NodeDir, depcmd.PythonDir)
	}
}

func TestDepsDirReachesTheProcess(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{Argv: []string{"sh", "-c", "env"}, Env: map[string]string{"NODE_PATH": "/opt/mods"}}, Output: out,
		DepsDir: "/state/deps/p1"})
	if res := h.Wait(); res.Status != run.AttemptSucceeded {
		t.Fatalf("result %+v: %s", res, out)
	}
	for _, want := range []string{"QL3_DEPS_DIR=/state/deps/p1\n", "PATH=/state/deps/p1/python/bin:", "NODE_PATH=/state/deps/p1/node/node_modules:/opt/mods\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	slot, ok := e.TryAcquire()
	if !ok {
		t.Fatal("no free slot")
	}
	defer slot.Release()
	if _, err := e.Start(slot, Request{RunID: "r", Attempt: 1, TaskID: "t", Spec: Spec{Argv: []string{"true"}}, DepsDir: "/d",
		ExtraEnv: map[string]string{"QL3_DEPS_DIR": "/elsewhere"}, Output: newOutput()}); err == nil || !strings.Contains(err.Error(), "extraEnv.") {
		t.Errorf("an extra QL3_DEPS_DIR over the executor's: %v", err)
	}
}
