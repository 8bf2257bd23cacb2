package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

// gateRunner's processes end together when the gate closes (nil gate: at
// once), so the test decides exactly which attempts end in the same pass.
// Every spawn records whether the authority had seen the attempt's
// starting ack (the start barrier).
type gateRunner struct {
	mu       sync.Mutex
	gate     chan struct{}
	h        *harness
	spawns   map[string]int
	unbarred []string
}

type gateProc struct{ done <-chan struct{} }

func (p gateProc) Identity() string      { return "1:1:1:boot-1" }
func (p gateProc) Done() <-chan struct{} { return p.done }
func (p gateProc) Result() agent.Outcome {
	zero := 0
	return agent.Outcome{Status: run.AttemptSucceeded, ExitCode: &zero, StartedAt: start, FinishedAt: start.Add(time.Second)}
}
func (p gateProc) Stop(agent.StopReason) {}
func (p gateProc) Kill()                 {}

func (r *gateRunner) Start(l agent.Launch) (agent.Process, error) {
	if st := r.h.srvRun(l.RunID).State; st != "started" {
		r.mu.Lock()
		r.unbarred = append(r.unbarred, l.RunID+" spawned with the authority's state "+st)
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spawns[l.RunID]++
	if r.gate != nil {
		return gateProc{r.gate}, nil
	}
	done := make(chan struct{})
	close(done)
	return gateProc{done}, nil
}

func (r *gateRunner) TerminateSurvivors(context.Context, string, int, string) (int, error) {
	return 0, nil
}
func (r *gateRunner) BootID() string { return "boot-1" }

// TestLeaseBatchesRideTheCompletion (ADR 0058): two attempts that end in
// the same pass deliver their completions in one lease batch; from then on
// the starting ack goes in a batch and is answered before the spawn, and
// the running ack of a process that already ended rides with its
// completion — no single ack or completion request for those runs.
func TestLeaseBatchesRideTheCompletion(t *testing.T) {
	r := &gateRunner{gate: make(chan struct{}), spawns: map[string]int{}}
	h := newHarness(t, r)
	r.h = h
	h.cfg.Capacity = 2
	h.srv.With(func(s *fakeingress.Server) { s.Batches = true })
	h.srv.AddRun("run-1", "true", 600_000)
	h.srv.AddRun("run-2", "true", 600_000)
	h.start(nil)
	spawned := func(n int) bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.spawns) >= n }
	if !h.drive(time.Second, 200, func() bool { return spawned(2) }) {
		t.Fatalf("two attempts never ran at once: %v", r.spawns)
	}
	r.mu.Lock()
	close(r.gate) // both processes end now, together
	r.gate = nil
	r.mu.Unlock()
	h.srv.AddRun("run-3", "true", 600_000)
	h.srv.AddRun("run-4", "true", 600_000)
	allDone := func() bool {
		for _, id := range []string{"run-1", "run-2", "run-3", "run-4"} {
			if h.srvRun(id).State != "done" {
				return false
			}
		}
		return true
	}
	if !h.drive(time.Second, 200, allDone) {
		t.Fatalf("runs never completed: %+v %+v %+v %+v", h.srvRun("run-1"), h.srvRun("run-2"), h.srvRun("run-3"), h.srvRun("run-4"))
	}
	batches := h.requestsTo(protocol.PathLeaseBatch)
	if len(batches) == 0 {
		t.Fatal("no lease batch was sent")
	}
	first, err := protocol.DecodeLeaseBatch(batches[0].Body)
	if err != nil || len(first.Completions) != 2 {
		t.Fatalf("first batch: %d completions, %v; want run-1's and run-2's together", len(first.Completions), err)
	}
	for _, id := range []string{"run-1", "run-2", "run-3", "run-4"} {
		got := h.srvRun(id)
		if got.Completion == nil || got.Completion.Status != run.AttemptSucceeded || got.Completions != 1 {
			t.Errorf("%s: completion %+v (%d requests)", id, got.Completion, got.Completions)
		}
		if r.spawns[id] != 1 {
			t.Errorf("%s spawned %d times", id, r.spawns[id])
		}
	}
	if len(r.unbarred) > 0 {
		t.Errorf("spawned before the starting ack was answered: %v", r.unbarred)
	}
	for _, path := range []string{protocol.PathLeaseAck, protocol.PathLeaseComplete} {
		for _, req := range h.requestsTo(path) {
			if body := string(req.Body); strings.Contains(body, "run-3") || strings.Contains(body, "run-4") {
				t.Errorf("a single %s request after batches were served: %s", path, body)
			}
		}
	}
	rides := 0
	for _, req := range batches {
		b, err := protocol.DecodeLeaseBatch(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b.Completions {
			for _, a := range b.Acks {
				if a.Phase == protocol.AckRunning && a.AttemptID == c.AttemptID {
					rides++
				}
			}
		}
	}
	if rides != 2 {
		t.Errorf("%d running acks rode their completion, want 2 (run-3, run-4)", rides)
	}
}
