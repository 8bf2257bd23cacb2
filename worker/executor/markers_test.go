//go:build linux

package executor

import (
	"errors"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
)

// Markers reach the process; a marker that is not QL3_* or that would
// replace one of the executor's own is refused at start.
func TestMarkers(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{Argv: []string{"sh", "-c", "env"}}, Output: out,
		Markers: map[string]string{"QL3_SCRIPT": "dir/a.js", "QL3_SCRIPTS_DIR": "/data/scripts"}})
	if res := h.Wait(); res.Status != run.AttemptSucceeded {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []string{"QL3_SCRIPT=dir/a.js\n", "QL3_SCRIPTS_DIR=/data/scripts\n", "QL3_RUN_ID=run-1\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range []map[string]string{{"SCRIPT": "x"}, {"QL3_RUN_ID": "forged"}, {"QL3_X": "a\x00b"}} {
		slot, ok := e.TryAcquire()
		if !ok {
			t.Fatal("no free slot")
		}
		_, err := e.Start(slot, Request{RunID: "run-2", Attempt: 1, TaskID: "task-1", Spec: Spec{Argv: []string{"true"}}, Markers: bad})
		var se *StartError
		if !errors.As(err, &se) || errs.Field(err) != "markers" {
			t.Errorf("markers %v: %v", bad, err)
		}
	}
}
