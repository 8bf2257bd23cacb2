//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/scripts"
)

// withScripts gives e a scripts folder holding a .js and a .py script that
// each load a sibling module, the `task` helper (calling this test binary,
// see TestMain) and the interpreter overrides given.
func (e *env) withScripts(overrides ...string) *scripts.Folder {
	e.t.Helper()
	folder, err := scripts.Open(filepath.Join(e.dir, "scripts"))
	if err != nil {
		e.t.Fatal(err)
	}
	files := map[string]string{
		"dir/main.js": `const u = require('./util');
console.log(u.greet(process.env.GREETING), 'args=' + process.argv.slice(2).join(','), 'script=' + process.env.QL3_SCRIPT,
  process.cwd() === __dirname ? 'cwd-ok' : 'cwd-wrong', 'masked=' + process.env.GREETING);
`,
		"dir/util.js": "exports.greet = s => 'greeting:' + s.toUpperCase();\n",
		"dir/main.py": `import os, sys
import util
print(util.greet(os.environ['GREETING']), 'args=' + ','.join(sys.argv[1:]), 'script=' + os.environ['QL3_SCRIPT'],
      'cwd-ok' if os.getcwd() == os.path.dirname(os.path.abspath(__file__)) else 'cwd-wrong', 'masked=' + os.environ['GREETING'])
`,
		"dir/util.py": "def greet(s):\n    return 'greeting:' + s.upper()\n",
	}
	for p, c := range files {
		if _, _, err := folder.Write(p, []byte(c), scripts.Precondition{IfNoneMatch: true}); err != nil {
			e.t.Fatal(err)
		}
	}
	interps, err := scriptpath.NewInterpreters(overrides)
	if err != nil {
		e.t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	bin := filepath.Join(e.dir, "bin")
	if _, err := scripts.WriteHelper(bin, []string{self, scripts.HelperSubcommand}, folder.Root(), overrides); err != nil {
		e.t.Fatal(err)
	}
	e.r, err = New(Config{Store: e.store, Executor: e.exec, Logs: e.logs, StateDir: filepath.Join(e.dir, "runner"), Clock: e.clock,
		Envs: e.store, Scripts: &Scripts{Folder: folder, Interpreters: interps, BinDir: bin}})
	if err != nil {
		e.t.Fatal(err)
	}
	return folder
}

func scriptTask(file string, args ...string) spec.Command {
	return spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: file, Args: args}}.WithDefaults()
}

// A .js and a .py script run as script tasks: interpreter by extension,
// from the script's folder (a sibling module loads), with the env store's
// value (masked in the log, seen by the process) and QL3_SCRIPT; the
// attempt records the tree digest of the folder it started from. `task`
// in a shell task runs the same scripts with arguments.
func TestScriptTasks(t *testing.T) {
	e := newEnv(t).withEnvStore()
	folder := e.withScripts()
	e.envs(edge.EnvInput{Name: "GREETING", Value: "hello-from-store", Enabled: true})
	js := e.task("js", scriptTask("dir/main.js", "a", "b"))
	py := e.task("py", scriptTask("dir/main.py", "a", "b"))
	viaTask := e.task("via task", shellTask("task dir/main.js a b && task -m 60 ./dir/main.py a b", nil))
	e.start()
	_, tree, err := folder.Tree("dir")
	if err != nil {
		t.Fatal(err)
	}
	want := func(file string) string {
		return "greeting:HELLO-FROM-STORE args=a,b script=" + file + " cwd-ok masked=***\n"
	}
	for _, tc := range []struct {
		task edge.Task
		log  string
		tree string
	}{
		{js, want("dir/main.js"), tree.String()},
		{py, want("dir/main.py"), tree.String()},
		{viaTask, want("dir/main.js") + want("dir/main.py"), ""},
	} {
		r := e.runNow(tc.task.ID)
		e.waitRun(r.ID, "finished", func(r edge.Run) bool { return r.Status.Terminal() })
		log := e.readLog(r.ID, 1)
		if got := e.getRun(r.ID); got.Status != run.RunSucceeded || log != tc.log {
			t.Errorf("%s: %s, log %q; want %q", tc.task.Name, got.Status, log, tc.log)
		}
		if a := e.attempts(r.ID)[0]; a.ScriptTree != tc.tree {
			t.Errorf("%s: attempt tree %q, want %q", tc.task.Name, a.ScriptTree, tc.tree)
		}
	}
}

// A missing interpreter, a missing script and conc/desi through `task`
// end the attempt at start with a message naming the cause; nothing hangs.
func TestScriptStartFailures(t *testing.T) {
	e := newEnv(t).withEnvStore()
	e.withScripts(".py=/nonexistent/python9")
	e.envs(edge.EnvInput{Name: "GREETING", Value: "x", Enabled: true})
	noInterp := e.task("py", scriptTask("dir/main.py"))
	missing := e.task("missing", scriptTask("dir/gone.js"))
	conc := e.task("conc", shellTask("task dir/main.js conc JD_COOKIE", nil))
	helperInterp := e.task("helper py", shellTask("task dir/main.py", nil))
	e.start()
	for _, tc := range []struct {
		task       edge.Task
		class      run.ErrorClass
		msg, inLog string
	}{
		{noInterp, run.ErrorExecutorStart, "/nonexistent/python9", "/nonexistent/python9"},
		{missing, run.ErrorExecutorStart, `"dir/gone.js" is not in the scripts folder`, "dir/gone.js"},
		{conc, run.ErrorProcessExit, "", "conc (one run per account of JD_COOKIE) is not supported"},
		{helperInterp, run.ErrorProcessExit, "", "/nonexistent/python9 not found"},
	} {
		r := e.runNow(tc.task.ID)
		e.waitRun(r.ID, "failed", status(run.RunFailed))
		a := e.attempts(r.ID)[0]
		log := e.readLog(r.ID, 1)
		if a.ErrorClass != tc.class || !strings.Contains(a.Message, tc.msg) || !strings.Contains(log, tc.inLog) {
			t.Errorf("%s: %s %q, log %q; want %s naming %q / %q", tc.task.Name, a.ErrorClass, a.Message, log, tc.class, tc.msg, tc.inLog)
		}
	}
}

// A runner without a scripts folder refuses a script task at start.
func TestScriptWithoutFolder(t *testing.T) {
	e := newEnv(t)
	task := e.task("js", scriptTask("a.js"))
	e.start()
	r := e.runNow(task.ID)
	e.waitRun(r.ID, "failed", status(run.RunFailed))
	if a := e.attempts(r.ID)[0]; !strings.Contains(a.Message, "no scripts folder") {
		t.Fatalf("message %q", a.Message)
	}
}
