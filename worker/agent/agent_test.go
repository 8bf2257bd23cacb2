package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
)

// The basic path: session, pull, starting/running acks, logs, completion.
func TestRunsOneOfferToCompletion(t *testing.T) {
	r := newFakeRunner("hello from the task\n")
	h := newHarness(t, r)
	h.srv.AddRun("run-1", "echo hi", 60_000)
	h.start(nil)
	if !h.drive(time.Second, 200, func() bool { return h.srvRun("run-1").State == "done" }) {
		t.Fatalf("run-1 never completed: %+v", h.srvRun("run-1"))
	}
	got := h.srvRun("run-1")
	if string(got.Log) != "hello from the task\n" || !got.LogClosed || got.CompletedEarly {
		t.Fatalf("log %q closed=%v early=%v", got.Log, got.LogClosed, got.CompletedEarly)
	}
	if got.Completion.Status != "succeeded" || got.Completion.StdoutBytes != int64(len(got.Log)) {
		t.Fatalf("completion %+v", got.Completion)
	}
	if n := r.spawnCounts()["run-1/1"]; n != 1 {
		t.Fatalf("spawned %d times", n)
	}
	for _, req := range h.requestsTo(protocol.PathSessionHeartbeat) {
		if !strings.Contains(string(req.Body), `"credentialId":"cred-a"`) {
			t.Fatalf("heartbeat without the observed credential id: %s", req.Body)
		}
	}
}
