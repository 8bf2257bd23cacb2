package agent_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/executor"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

// transitions returns the index (among all requests) and target of every
// transition request, plus the index of every completion.
func (h *harness) order() (draining, offline, complete []int) {
	h.srv.With(func(s *fakeingress.Server) {
		for i, r := range s.Requests() {
			switch r.Path {
			case protocol.PathSessionTransition:
				tr, err := protocol.DecodeSessionTransition(r.Body)
				if err == nil && tr.To == protocol.SessionDraining {
					draining = append(draining, i)
				} else if err == nil {
					offline = append(offline, i)
				}
			case protocol.PathLeaseComplete:
				complete = append(complete, i)
			}
		}
	})
	return
}

// SIGTERM with a running task: draining, the task completes, its
// completion is delivered, then offline, and Run returns nil. A 503 on
// offline is retried, never taken as done.
func TestDrainThenOfflineRetries503(t *testing.T) {
	r := newFakeRunner("drained output\n")
	r.hold = true
	h := newHarness(t, r)
	h.srv.AddRun("run-1", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 100, func() bool { return h.srvRun("run-1").State == "started" }) {
		t.Fatal("never started")
	}
	h.a.Drain()
	if !h.drive(time.Second, 100, func() bool {
		_, _, st := sessionOf(h)
		return st == string(protocol.SessionDraining)
	}) {
		t.Fatal("the session never went draining")
	}
	h.srv.With(func(s *fakeingress.Server) { s.Fail503[protocol.PathSessionTransition] = -1 })
	h.drive(time.Second, 5, func() bool { return false })
	if h.srvRun("run-1").Completion != nil {
		t.Fatal("completed before the task ended")
	}
	r.release("run-1/1")
	if !h.drive(time.Second, 100, func() bool { return h.srvRun("run-1").Completion != nil }) {
		t.Fatal("the completion was not delivered while draining")
	}
	// Offline answers 503 for a while: the worker keeps asking.
	h.drive(time.Second, 300, func() bool {
		_, off, _ := h.order()
		return len(off) >= 4
	})
	if _, exited := h.exited(); exited {
		t.Fatal("the worker stopped although offline was never confirmed")
	}
	h.srv.With(func(s *fakeingress.Server) { s.Fail503[protocol.PathSessionTransition] = 0 })
	h.drive(time.Second, 300, func() bool {
		select {
		case err := <-h.done:
			h.done <- err
			return true
		default:
			return false
		}
	})
	err, exited := h.exited()
	if !exited || err != nil {
		t.Fatalf("Run exited=%v err=%v, want a clean exit after offline", exited, err)
	}
	if _, _, st := sessionOf(h); st != string(protocol.SessionOffline) {
		t.Fatalf("session status %s, want offline", st)
	}
	drain, off, comp := h.order()
	if len(drain) == 0 || len(comp) == 0 || len(off) < 5 {
		t.Fatalf("draining %v completion %v offline %v", drain, comp, off)
	}
	if !(drain[0] < comp[0] && comp[len(comp)-1] < off[0]) {
		t.Fatalf("order: draining %v, completion %v, offline %v; want draining < completion < offline", drain, comp, off)
	}
	if got := h.srvRun("run-1"); string(got.Log) != "drained output\n" || got.Completion.Status != "succeeded" {
		t.Fatalf("log %q completion %+v", got.Log, got.Completion)
	}
}

// Lost answers to log chunks and to the completion: the worker resumes
// from the authority's next offset, never duplicates or skips bytes, and
// sends the completion only after the eof.
func TestLogResumeAfterLostReceipt(t *testing.T) {
	out := strings.Repeat("0123456789abcdef", 100<<10/16) // 100 KiB: four chunks
	r := newFakeRunner(out)
	h := newHarness(t, r)
	h.srv.With(func(s *fakeingress.Server) {
		s.DropAnswer[protocol.PathLeaseLog] = 2
		s.DropAnswer[protocol.PathLeaseComplete] = 1
	})
	h.srv.AddRun("run-1", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 300, func() bool { return journalEmptyAfter(h, "run-1") }) {
		t.Fatalf("run never settled: %+v", h.srvRun("run-1").State)
	}
	got := h.srvRun("run-1")
	if !bytes.Equal(got.Log, []byte(out)) || !got.LogClosed {
		t.Fatalf("stored log is %d bytes (closed %v), want the %d bytes exactly", len(got.Log), got.LogClosed, len(out))
	}
	if got.CompletedEarly || got.Completions < 2 || got.Completion.StdoutBytes != int64(len(out)) {
		t.Fatalf("completions %d early %v stdoutBytes %d", got.Completions, got.CompletedEarly, got.Completion.StdoutBytes)
	}
	if n := len(h.requestsTo(protocol.PathLeaseLog)); n < 6 {
		t.Fatalf("%d log requests; want the 4 chunks, the eof and the resent ones", n)
	}
}

// Output beyond the spool cap keeps its head and its tail with a marker
// line between them (ADR 0042), and is flagged truncated.
func TestLogCapKeepsHeadAndTail(t *testing.T) {
	out := "HEAD" + strings.Repeat("x", 4088) + "TAIL"
	r := newFakeRunner(out)
	h := newHarness(t, r)
	h.cfg.LogBytes = 1024
	h.srv.AddRun("run-1", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 100, func() bool { return h.srvRun("run-1").Completion != nil }) {
		t.Fatal("no completion")
	}
	got := h.srvRun("run-1")
	head, tail := executor.HeadBytes(1024), executor.TailBytes(1024)
	want := out[:head] + executor.DroppedMarker(4096-head-tail, head, tail) + out[4096-tail:]
	if string(got.Log) != want || !got.Completion.LogTruncated || got.Completion.StdoutBytes != int64(len(want)) {
		t.Fatalf("log %q, truncated %v, stdoutBytes %d; want %q", got.Log, got.Completion.LogTruncated, got.Completion.StdoutBytes, want)
	}
}

func journalEmptyAfter(h *harness, id string) bool {
	return h.srvRun(id).Completion != nil && journalEmptyWhileRunning(h)
}

// A two-minute outage (every request black-holed): the worker fences what
// it ran, gives the session up, and opens a new session (generation + 1)
// on its own once the ingress answers again; new work then runs.
func TestReopenSessionAfterOutage(t *testing.T) {
	r := newFakeRunner("")
	r.hold = true
	h := newHarness(t, r)
	fenced := make(chan string, 8)
	h.cfg.Hooks.Fenced = func(_, reason string) { fenced <- reason }
	h.srv.AddRun("run-1", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 100, func() bool { return h.srvRun("run-1").State == "started" }) {
		t.Fatal("never started")
	}
	paths := []string{protocol.PathSessionOpen, protocol.PathSessionHeartbeat, protocol.PathSessionTransition,
		protocol.PathOfferPull, protocol.PathLeaseAck, protocol.PathLeaseLog, protocol.PathLeaseComplete}
	h.srv.With(func(s *fakeingress.Server) {
		for _, p := range paths {
			s.BlackHole[p] = true
		}
	})
	outageEnd := h.clk.Now().Add(2 * time.Minute)
	h.drive(time.Second, 200, func() bool { return !h.clk.Now().Before(outageEnd) })
	if len(fenced) == 0 {
		t.Fatal("the running attempt was not fenced during the outage")
	}
	h.srv.With(func(s *fakeingress.Server) {
		for _, p := range paths {
			s.BlackHole[p] = false
		}
	})
	h.srv.AddRun("run-2", "true", 600_000)
	r.mu.Lock()
	r.hold = false
	r.mu.Unlock()
	if !h.drive(time.Second, 300, func() bool { return h.srvRun("run-2").State == "done" }) {
		_, gen, st := sessionOf(h)
		t.Fatalf("no work after the outage: session generation %d status %s, run-2 %s", gen, st, h.srvRun("run-2").State)
	}
	if _, gen, _ := sessionOf(h); gen != 2 {
		t.Fatalf("session generation %d, want 2 (reopened by the worker itself)", gen)
	}
	if n := r.spawnCounts()["run-1/1"]; n != 1 {
		t.Fatalf("run-1 spawned %d times", n)
	}
}

// 401 answers (a credential mid-rotation) refuse nothing about the
// request: the completion is retried, never dropped.
func TestUnauthorizedIsRetriedNeverDropsTheCompletion(t *testing.T) {
	r := newFakeRunner("out\n")
	h := newHarness(t, r)
	h.srv.With(func(s *fakeingress.Server) {
		s.Refuse401[protocol.PathLeaseComplete] = 3
		s.Refuse401[protocol.PathLeaseLog] = 2
	})
	h.srv.AddRun("run-1", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 300, func() bool { return journalEmptyAfter(h, "run-1") }) {
		t.Fatal("run never settled")
	}
	got := h.srvRun("run-1")
	if string(got.Log) != "out\n" || got.Completion == nil || got.Completion.Status != "succeeded" {
		t.Fatalf("log %q completion %+v", got.Log, got.Completion)
	}
	if n := len(h.requestsTo(protocol.PathLeaseComplete)); n != 4 {
		t.Fatalf("%d completion requests, want 3 refused + 1", n)
	}
}
