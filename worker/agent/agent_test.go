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

// A session lease that the authority allows (two heartbeat intervals) but
// that is short for this worker's fence margin and kill grace: the worker
// heartbeats early instead of giving the session up before its first
// heartbeat and churning sessions.
func TestShortSessionLeaseHeartbeatsEarlyInsteadOfChurning(t *testing.T) {
	h := newHarness(t, newFakeRunner(""))
	h.srv.HeartbeatMs, h.srv.SessionMs = 5_000, 10_000
	h.cfg.FenceMargin = 5 * time.Second
	h.start(nil)
	steps := 0
	h.drive(time.Second, 200, func() bool { steps++; return steps > 60 })
	if opens := len(h.requestsTo(protocol.PathSessionOpen)); opens != 1 {
		t.Fatalf("%d session opens in 60 s; want 1 (the session was given up before a heartbeat renewed it)", opens)
	}
	// Give-up point ≈ 9 s − 5.2 s after each renewal: a beat at most
	// halfway there, i.e. at least one per 2 s of fake time.
	if beats := len(h.requestsTo(protocol.PathSessionHeartbeat)); beats < 25 {
		t.Fatalf("%d heartbeats in 60 s; want ≥ 25", beats)
	}
}
