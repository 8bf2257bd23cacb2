package agent_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/internal/fakeingress"
	"github.com/ql3/ql3/worker/journal"
)

var errCrash = errors.New("simulated crash")

// readPending opens the (unlocked) state dir of a stopped worker and
// returns its pending pull.
func readPending(t *testing.T, dir string) *journal.Pending {
	t.Helper()
	j, err := journal.Open(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	p, err := j.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func journalEmpty(t *testing.T, dir string) bool {
	t.Helper()
	j, err := journal.Open(dir, 0, nil)
	if err != nil {
		return false // still locked by a running agent
	}
	defer j.Close()
	p, _ := j.Pending()
	e, _, _ := j.Entries()
	return p == nil && len(e) == 0
}

// 100 crashes at random journal steps (deterministic seed): no attempt is
// ever spawned twice, a pending pull is resent unchanged after the crash,
// and every run ends done or lost with its completion after its logs.
func TestJournalCrashesNeverSpawnTwice(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261201, 11))
	r := newFakeRunner("output line\n")
	h := newHarness(t, r)
	next := 0
	addRuns := func(n int) {
		for range n {
			h.srv.AddRun(fmt.Sprintf("run-%03d", next), "true", 60_000)
			next++
		}
	}
	settled := func() bool {
		ok := true
		h.srv.With(func(s *fakeingress.Server) {
			for _, x := range s.Runs() {
				if x.State != "done" && x.State != "lost" {
					ok = false
				}
			}
		})
		return ok
	}
	addRuns(4)
	crashSteps := map[string]int{}
	type reuse struct {
		mark    int
		pending journal.Pending
	}
	var checks []reuse
	for crashes := 0; crashes < 100; {
		target := 1 + rng.IntN(30)
		n, crashedAt := 0, ""
		h.start(func(step string) error {
			n++
			if n == target {
				crashedAt = step
				return errCrash
			}
			return nil
		})
		h.drive(time.Second, 400, func() bool {
			select {
			case err := <-h.done:
				h.done <- err
				return true
			default:
			}
			return settled()
		})
		err, exited := h.exited()
		if !exited {
			if err := h.stop(); err != nil && !strings.Contains(err.Error(), "context canceled") {
				t.Fatalf("agent stopped with %v", err)
			}
			addRuns(3)
			continue
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("agent exited with %v, want the simulated crash", err)
		}
		crashes++
		crashSteps[crashedAt]++
		if p := readPending(t, h.state); p != nil {
			checks = append(checks, reuse{mark: len(h.requestsTo(protocol.PathOfferPull)), pending: *p})
		}
	}
	// A last life without faults settles everything.
	h.start(nil)
	if !h.drive(time.Second, 2000, func() bool { return settled() && journalEmptyWhileRunning(h) }) {
		t.Fatalf("runs did not settle after the crashes")
	}
	h.stop()

	for k, v := range r.spawnCounts() {
		if v > 1 {
			t.Errorf("attempt %s spawned %d times", k, v)
		}
	}
	pulls := h.requestsTo(protocol.PathOfferPull)
	tokens := map[string]string{}
	for _, p := range pulls {
		req, err := protocol.DecodeOfferPullRequest(p.Body)
		if err != nil {
			t.Fatal(err)
		}
		d := req.LeaseToken.Digest()
		if prev, ok := tokens[req.OfferID]; ok && prev != string(d[:]) {
			t.Errorf("offer id %s was sent with two different lease tokens", req.OfferID)
		}
		tokens[req.OfferID] = string(d[:])
	}
	for _, c := range checks {
		if c.mark >= len(pulls) {
			t.Errorf("a pending pull (offer %s) was never resent after the crash", c.pending.OfferID)
			continue
		}
		req, _ := protocol.DecodeOfferPullRequest(pulls[c.mark].Body)
		if req.OfferID != c.pending.OfferID || req.LeaseToken != c.pending.LeaseToken ||
			req.SessionID != c.pending.SessionID || req.Generation != c.pending.Generation {
			t.Errorf("first pull after the crash was offer %s, want the pending %s with the same token and session",
				req.OfferID, c.pending.OfferID)
		}
	}
	done, lost := 0, 0
	h.srv.With(func(s *fakeingress.Server) {
		for _, x := range s.Runs() {
			switch x.State {
			case "done":
				done++
				if x.CompletedEarly || !x.LogClosed {
					t.Errorf("%s: completion before its logs", x.ID)
				}
			case "lost":
				lost++
			}
		}
	})
	var steps []string
	for s := range crashSteps {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	for _, want := range []string{"pending.put", "entry.accepted", "pending.clear", "entry.launching", "entry.started", "entry.finished", "entry.drop"} {
		hit := false
		for _, s := range steps {
			hit = hit || strings.HasPrefix(s, want+":")
		}
		if !hit {
			t.Errorf("no crash landed on a %s step (steps hit: %v)", want, steps)
		}
	}
	t.Logf("100 crashes over %d steps %v; %d resent pendings checked; runs: %d done, %d lost; %d pull requests",
		len(steps), steps, len(checks), done, lost, len(pulls))
}

// journalEmptyWhileRunning asks the running agent's journal directly.
func journalEmptyWhileRunning(h *harness) bool {
	p, err := h.j.Pending()
	if err != nil || p != nil {
		return false
	}
	e, _, err := h.j.Entries()
	return err == nil && len(e) == 0
}

// A crash after the offer reached the inbox but before the pending record
// was cleared: the restart resends the same pull, the authority replays the
// same offer, and the journal keeps exactly the one entry.
func TestCrashBetweenInboxWriteAndPendingClearReplays(t *testing.T) {
	r := newFakeRunner("")
	r.hold = true
	h := newHarness(t, r)
	h.srv.AddRun("run-1", "true", 60_000)
	h.startCrashingAt("pending.clear:remove")
	p := readPending(t, h.state)
	if p == nil {
		t.Fatal("no pending pull after the crash")
	}
	first := h.srvRun("run-1")
	mark := len(h.requestsTo(protocol.PathOfferPull))
	h.start(nil)
	if !h.drive(time.Second, 100, func() bool { return len(h.requestsTo(protocol.PathOfferPull)) > mark }) {
		t.Fatal("the pending pull was not resent")
	}
	h.drive(time.Second, 5, func() bool { return false })
	h.stop()
	req, _ := protocol.DecodeOfferPullRequest(h.requestsTo(protocol.PathOfferPull)[mark].Body)
	if req.OfferID != p.OfferID || req.LeaseToken != p.LeaseToken {
		t.Fatalf("resent pull is offer %s, want %s with the same token", req.OfferID, p.OfferID)
	}
	after := h.srvRun("run-1")
	claims := 0
	for _, id := range after.Claims {
		if id == p.OfferID {
			claims++
		}
	}
	if first.OfferID != p.OfferID || claims != 1 || after.Replays < 1 {
		t.Fatalf("offer %s: claimed %d times, replayed %d times (first claim %s); want one claim and a replay",
			p.OfferID, claims, after.Replays, first.OfferID)
	}
	if n := r.spawnCounts()["run-1/1"]; n > 1 {
		t.Fatalf("spawned %d times", n)
	}
}
