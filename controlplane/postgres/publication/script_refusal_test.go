package publication_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// TestScriptSpecsRefusedOnTheCluster: a script task or a random start
// delay is refused at publish with the field named, until workers can
// fetch script trees and admission applies the delay (#22); a plain argv
// task still compiles.
func TestScriptSpecsRefusedOnTheCluster(t *testing.T) {
	t.Parallel()
	base := func() spec.Command {
		return spec.Command{Kind: spec.KindCommandV1, TimeoutMs: 1000, Retry: spec.RetryPolicy{MaxAttempts: 1}, Concurrency: spec.DefaultConcurrency}
	}
	script := base()
	script.Script = &spec.Script{File: "a.js"}
	delayed := base()
	delayed.Argv, delayed.RandomDelayMs = &spec.Argv{File: "/bin/true"}, 5000
	plain := base()
	plain.Argv = &spec.Argv{File: "/bin/true"}
	for field, cmd := range map[string]spec.Command{"spec.script": script, "spec.randomDelayMs": delayed} {
		if err := publication.CompileSpecForTest(cmd); errs.Field(err) != field {
			t.Errorf("%s: %v, want an error on %s", field, err, field)
		}
	}
	if err := publication.CompileSpecForTest(plain); err != nil {
		t.Errorf("a plain argv task: %v", err)
	}
}
