package executor

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/run"
)

func TestExtraEnvIsSetAndBoundToQL3Names(t *testing.T) {
	e, _ := newTestExecutor(t, nil)
	out := newOutput()
	h := start(t, e, Request{Spec: Spec{Argv: []string{"sh", "-c", "env"}}, Output: out,
		ExtraEnv: map[string]string{"QL3_NOTIFY_URL": "http://127.0.0.1:5700/api/v1/notify/send", "QL3_NOTIFY_TOKEN": "ql3n_x_y"}})
	if res := h.Wait(); res.Status != run.AttemptSucceeded {
		t.Fatalf("result %+v: %s", res, out)
	}
	for _, want := range []string{"QL3_NOTIFY_URL=http://127.0.0.1:5700/api/v1/notify/send\n", "QL3_NOTIFY_TOKEN=ql3n_x_y\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range []map[string]string{{"NOTIFY": "x"}, {"QL3_RUN_ID": "other"}, {"QL3_X": "a\x00b"}} {
		slot, ok := e.TryAcquire()
		if !ok {
			t.Fatal("no free slot")
		}
		if _, err := e.Start(slot, Request{RunID: "r", Attempt: 1, TaskID: "t", Spec: Spec{Argv: []string{"true"}}, ExtraEnv: bad, Output: newOutput()}); err == nil ||
			!strings.Contains(err.Error(), "extraEnv.") {
			t.Errorf("ExtraEnv %q: %v", bad, err)
		}
		slot.Release()
	}
}
