package executor

import (
	"reflect"
	"testing"
	"time"

	"github.com/ql3/ql3/core/spec"
)

func TestSpecFor(t *testing.T) {
	env := map[string]string{"A": "1"}
	argv := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/echo", Args: []string{"a", "b"}},
		Environment: env, WorkingDirectory: "/tmp", TimeoutMs: 1500}
	got := SpecFor(argv, 1500*time.Millisecond)
	want := Spec{Argv: []string{"/bin/echo", "a", "b"}, Env: env, WorkDir: "/tmp", Timeout: 1500 * time.Millisecond}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argv spec = %+v, want %+v", got, want)
	}
	got.Argv[0] = "changed"
	if argv.Argv.File != "/bin/echo" {
		t.Error("SpecFor shares the argv with the spec")
	}
	shell := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "echo hi", Shell: "/bin/bash"}, TimeoutMs: 10}
	got = SpecFor(shell, time.Second)
	want = Spec{ShellCommand: "echo hi", Shell: "/bin/bash", Timeout: time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shell spec = %+v, want %+v", got, want)
	}
}
