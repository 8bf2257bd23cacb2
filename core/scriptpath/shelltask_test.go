package scriptpath

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// A shell task's `task` line: plain lines are script calls, conc/desi and
// malformed lines are refused on field command, anything else is not one.
func TestShellTask(t *testing.T) {
	tc, ok, err := ShellTask("task dir/x.js a 'b c'")
	if !ok || err != nil || !reflect.DeepEqual(tc, TaskCommand{File: "dir/x.js", Args: []string{"a", "b c"}}) {
		t.Errorf("plain line: %+v, %v, %v", tc, ok, err)
	}
	if tc, ok, err := ShellTask("task -m 30 x.py now"); !ok || err != nil || tc.MaxTimeSec != 30 || tc.Mode != "now" {
		t.Errorf("-m and now: %+v, %v, %v", tc, ok, err)
	}
	for cmd, want := range map[string]string{
		"task x.js conc JD_COOKIE":   "conc (one run per account of JD_COOKIE) is not supported by ql3",
		"task x.js desi JD_COOKIE 1": "desi (one run per account of JD_COOKIE) is not supported by ql3",
		"task ../x.js":               `must not contain ".."`,
		"task -m 0 x.js":             "1..604800",
	} {
		_, ok, err := ShellTask(cmd)
		if !ok || errs.Field(err) != "command" || !strings.Contains(err.Error(), want) {
			t.Errorf("ShellTask(%q) = ok %v, %v; want an error on command containing %q", cmd, ok, err, want)
		}
	}
	for _, cmd := range []string{"node x.js", "task x.js | tee log", "echo task"} {
		if _, ok, err := ShellTask(cmd); ok || err != nil {
			t.Errorf("ShellTask(%q) = ok %v, %v; want not a task line", cmd, ok, err)
		}
	}
	// RunsAsScript accepts exactly what ShellTask accepts without error.
	for _, cmd := range []string{"task dir/x.js a 'b c'", "task -m 30 x.py now", "task x.js conc JD_COOKIE", "task x.js desi JD 1", "task ../x.js", "node x.js", "task x.js | tee log", ""} {
		want, ok, err := ShellTask(cmd)
		got, runs := RunsAsScript(cmd)
		if runs != (ok && err == nil) || (runs && !reflect.DeepEqual(got, want)) {
			t.Errorf("RunsAsScript(%q) = %+v, %v; ShellTask %+v, %v, %v", cmd, got, runs, want, ok, err)
		}
	}
}

func TestSplitInterpreters(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                   nil,
		" , ":                                nil,
		".py=/opt/py/bin/python3":            {".py=/opt/py/bin/python3"},
		".py=/opt/py/bin/python3, .ts=tsx ,": {".py=/opt/py/bin/python3", ".ts=tsx"},
	} {
		if got := SplitInterpreters(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitInterpreters(%q) = %q, want %q", in, got, want)
		}
	}
}
