package publication_test

import (
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
}
