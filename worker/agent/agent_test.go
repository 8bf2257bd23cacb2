package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/internal/fakeingress"
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

// An ended attempt whose completion has no receipt yet still holds its
// lease on the authority, so its slot is not pulled for until the receipt
// (ADR 0032): with capacity 1 and the first completion's answer lost, no
// pull is sent between the completion and its retry.
func TestNoPullWhileACompletionIsUndelivered(t *testing.T) {
	h := newHarness(t, newFakeRunner(""))
	h.srv.With(func(s *fakeingress.Server) { s.DropAnswer[protocol.PathLeaseComplete] = 1 })
	h.srv.AddRun("run-1", "true", 600_000)
	h.srv.AddRun("run-2", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 200, func() bool { return h.srvRun("run-2").State == "done" }) {
		t.Fatalf("run-2 never completed: %+v", h.srvRun("run-2"))
	}
	var paths []string
	h.srv.With(func(s *fakeingress.Server) {
		for _, r := range s.Requests() {
			paths = append(paths, r.Path)
		}
	})
	completes := 0
	for _, p := range paths {
		switch {
		case p == protocol.PathLeaseComplete:
			completes++
		case p == protocol.PathOfferPull && completes == 1:
			t.Fatalf("a pull was sent while run-1's completion had no receipt: %v", paths)
		}
	}
	if completes < 3 {
		t.Fatalf("%d completion requests; want run-1's lost one, its retry and run-2's", completes)
	}
}
