//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

// TestScriptsThroughBinary: the real ql3-edge binary with scripts put by
// the CLI. A .js and a .py script (each loading a sibling module and
// printing a value of the env store) run as script tasks; `task FILE ARGS`
// in a shell task goes through the helper on the PATH, that is the
// binary's hidden subcommand, and prints the same; `script run --follow`
// is a normal Run whose output the CLI prints.
func TestScriptsThroughBinary(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startBinary(t, data)
	c := p.client(t, data)
	c.dataDir = data
	files := map[string]string{
		"dir/main.js": "const u = require('./util');\nconsole.log(u.greet(process.env.GREETING), process.argv.slice(2).join(','), process.env.QL3_SCRIPT);\n",
		"dir/util.js": "exports.greet = (s) => 'js:' + s.toUpperCase();\n",
		"dir/main.py": "import os, sys\nimport util\nprint(util.greet(os.environ['GREETING']), ','.join(sys.argv[1:]), os.environ['QL3_SCRIPT'])\n",
		"dir/util.py": "def greet(s):\n    return 'py:' + s.upper()\n",
	}
	for name, content := range files {
		local := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := c.ql3(nil, "script", "put", name, "--from", local); code != 0 || !strings.Contains(out, "created "+name) {
			t.Fatalf("script put %s: %d %q %q", name, code, out, errOut)
		}
	}
	if code, out, _ := c.ql3(nil, "script", "ls", "dir"); code != 0 || !strings.Contains(out, "main.py") || !strings.Contains(out, "util.js") {
		t.Fatalf("script ls: %d %q", code, out)
	}
	c.api("POST", "/api/v1/envs", map[string]any{"name": "GREETING", "value": "hello-store", "enabled": true}, 201, nil)
	c.createTask("js", `{"kind":"qinglong/command@v1","script":{"file":"dir/main.js","args":["a","b"]}}`)
	c.createTask("py", `{"kind":"qinglong/command@v1","script":{"file":"dir/main.py","args":["a","b"]}}`)
	c.createTask("via-task", shellSpec("task dir/main.js a b; task ./dir/main.py a b", ""))
	for task, want := range map[string]string{
		"js":       "js:HELLO-STORE a,b dir/main.js\n",
		"py":       "py:HELLO-STORE a,b dir/main.py\n",
		"via-task": "js:HELLO-STORE a,b dir/main.js\npy:HELLO-STORE a,b dir/main.py\n",
	} {
		var r httpapi.Run
		c.api("POST", "/api/v1/tasks/"+task+"/runs", nil, 201, &r)
		done := c.waitRun(r.ID, "to finish", status("succeeded", "failed", "timed_out", "cancelled"))
		_, log := c.raw("GET", "/api/v1/runs/"+r.ID+"/attempts/1/log", nil)
		if done.Status != "succeeded" || string(log) != want {
			t.Errorf("%s: %s, log %q; want %q", task, done.Status, log, want)
		}
	}
	// task add --script / --random-delay build the spec.
	if code, out, errOut := c.ql3(nil, "task", "add", "--name", "cli-script", "--script", "dir/main.js", "--random-delay", "1m", "--", "a", "b"); code != 0 {
		t.Fatalf("task add --script: %d %q %q", code, out, errOut)
	}
	var added httpapi.Task
	c.api("GET", "/api/v1/tasks/cli-script", nil, 200, &added)
	if sc := added.Spec.Script; sc == nil || sc.File != "dir/main.js" || strings.Join(sc.Args, ",") != "a,b" || added.Spec.RandomDelayMs != 60_000 {
		t.Errorf("task add --script: %+v", added.Spec)
	}
	code, out, errOut := c.ql3(nil, "script", "run", "dir/main.py", "x", "--follow")
	if code != 0 || out != "py:HELLO-STORE x dir/main.py\n" {
		t.Errorf("script run --follow: %d %q %q", code, out, errOut)
	}
}
