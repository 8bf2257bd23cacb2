package publication_test

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// TestScriptSpecsCompileOnTheCluster: a script task whose extension names
// an interpreter and a random start delay compile (the tree is pinned and
// the delay applied elsewhere: scriptstore and admission tests); a file no
// interpreter runs is refused at publish with the field named.
func TestScriptSpecsCompileOnTheCluster(t *testing.T) {
	t.Parallel()
	base := func() spec.Command {
		return spec.Command{Kind: spec.KindCommandV1, TimeoutMs: 1000, Retry: spec.RetryPolicy{MaxAttempts: 1}, Concurrency: spec.DefaultConcurrency}
	}
	for _, file := range []string{"a.js", "dir/b.py", "c.sh", "d.mjs", "e.ts"} {
		c := base()
		c.Script = &spec.Script{File: file, Args: []string{"x"}}
		if err := publication.CompileSpecForTest(c); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	for _, file := range []string{"a.rb", "Makefile"} {
		c := base()
		c.Script = &spec.Script{File: file}
		if err := publication.CompileSpecForTest(c); errs.Field(err) != "spec.script.file" {
			t.Errorf("%s: %v, want an error on spec.script.file", file, err)
		}
	}
	delayed := base()
	delayed.Argv, delayed.RandomDelayMs = &spec.Argv{File: "/bin/true"}, 5000
	if err := publication.CompileSpecForTest(delayed); err != nil {
		t.Errorf("randomDelayMs: %v", err)
	}

	// A shell task's `task FILE [ARGS]` line compiles (its tree is pinned
	// like a script task's: scriptstore's tests); a task line the edge's
	// helper refuses is refused here with the helper's message, on
	// spec.shell.command; other shell lines are untouched.
	for cmd, want := range map[string]string{
		"task dir/x.js a b":        "",
		"task -m 60 x.py now":      "",
		"echo task x.rb; task a.b": "",
		"task x.js conc JD_COOKIE": "conc (one run per account of JD_COOKIE) is not supported by ql3",
		"task x.js desi JD 1-2":    "desi (one run per account of JD) is not supported by ql3",
		"task ../x.js":             `must not contain ".."`,
		"task -m 0 x.js":           "1..604800",
		"task x.rb":                `no interpreter for ".rb" files`,
	} {
		c := base()
		c.Shell = &spec.Shell{Command: cmd, Shell: spec.ShellSh}
		err := publication.CompileSpecForTest(c)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", cmd, err)
			}
			continue
		}
		if errs.Field(err) != "spec.shell.command" || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error on spec.shell.command containing %q", cmd, err, want)
		}
	}
}
