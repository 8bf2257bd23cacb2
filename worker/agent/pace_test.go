package agent_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

// pacedHarness is a node-profile harness whose test loop advances the fake
// clock by exactly the loop's own wait at each pass (IdleFor), so a pull is
// observed at the instant the agent sends it, not rounded to a step.
type pacedHarness struct {
	*harness
	wait atomic.Int64 // the last IdleFor, ns
}

func newPacedHarness(t *testing.T, capacity int) *pacedHarness {
	h := &pacedHarness{harness: newHarness(t, newFakeRunner(""))}
	h.cfg.Cadence, h.cfg.Capacity = agent.NodeCadence, capacity
	h.cfg.Hooks.IdleFor = func(d time.Duration) { h.wait.Store(int64(d)) }
	return h
}

// runUntil advances the clock pass by pass until cond holds (at most max
// passes).
func (h *pacedHarness) runUntil(max int, cond func() bool) bool {
	h.t.Helper()
	for range max {
		if cond() {
			return true
		}
		select {
		case <-h.idle:
		case <-time.After(20 * time.Second):
			h.t.Fatalf("the agent did not come back to its loop within 20 s (real time)")
		}
		h.clk.Advance(time.Duration(h.wait.Load()))
	}
	return cond()
}

// TestEmptyPullFollowsTheMillisecondHint: after a 204 the next pull is sent
// at the hinted instant plus a jitter below a quarter of the hint (20 ms –
// 250 ms, at most the cadence) — not after the whole-second Retry-After,
// and not rounded up to the loop's cadence. Without the millisecond hint
// (or with a malformed one) Retry-After is the fallback.
func TestEmptyPullFollowsTheMillisecondHint(t *testing.T) {
	for _, c := range []struct {
		name     string
		headers  map[string]string
		min, max time.Duration // gap between consecutive pulls: [min, max)
	}{
		{"hint 700 ms", map[string]string{"Retry-After": "1", protocol.HeaderRetryAfterMs: "700"}, 700 * time.Millisecond, 875 * time.Millisecond},
		{"hint at the floor", map[string]string{"Retry-After": "1", protocol.HeaderRetryAfterMs: "100"}, 100 * time.Millisecond, 125 * time.Millisecond},
		{"hint below the floor is clamped", map[string]string{protocol.HeaderRetryAfterMs: "3"}, 100 * time.Millisecond, 125 * time.Millisecond},
		{"idle hint", map[string]string{"Retry-After": "2", protocol.HeaderRetryAfterMs: "2000"}, 2 * time.Second, 2250 * time.Millisecond},
		{"Retry-After only", map[string]string{"Retry-After": "2"}, 2 * time.Second, 2250 * time.Millisecond},
		{"malformed hint: Retry-After", map[string]string{"Retry-After": "1", protocol.HeaderRetryAfterMs: "0.7"}, time.Second, 1250 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newPacedHarness(t, 1)
			h.srv.With(func(s *fakeingress.Server) { s.EmptyPull = c.headers })
			h.start(nil)
			if !h.runUntil(200, func() bool { return len(h.requestsTo(protocol.PathOfferPull)) >= 4 }) {
				t.Fatalf("fewer than 4 pulls: %d", len(h.requestsTo(protocol.PathOfferPull)))
			}
			pulls := h.requestsTo(protocol.PathOfferPull)
			for i := 1; i < len(pulls); i++ {
				if gap := pulls[i].At.Sub(pulls[i-1].At); gap < c.min || gap >= c.max {
					t.Errorf("pull %d came %s after the previous one, want [%s, %s)", i, gap, c.min, c.max)
				}
			}
		})
	}
}

// TestAcceptedOfferStartsAndPullsAgainAtOnce: after an accepted offer the
// loop does not wait for its cadence: the same instant it acks starting
// (the process starts) and, with slots free, pulls again, so a burst of due
// Runs fills the slots back to back.
func TestAcceptedOfferStartsAndPullsAgainAtOnce(t *testing.T) {
	h := newPacedHarness(t, 3)
	h.srv.With(func(s *fakeingress.Server) {
		s.EmptyPull = map[string]string{"Retry-After": "1", protocol.HeaderRetryAfterMs: "900"}
	})
	h.srv.AddRun("run-1", "true", 60_000)
	h.srv.AddRun("run-2", "true", 60_000)
	h.start(nil)
	if !h.runUntil(100, func() bool { return len(h.requestsTo(protocol.PathLeaseAck)) >= 4 }) {
		t.Fatalf("the two runs were not both acked running: %d acks", len(h.requestsTo(protocol.PathLeaseAck)))
	}
	pulls, acks := h.requestsTo(protocol.PathOfferPull), h.requestsTo(protocol.PathLeaseAck)
	first := pulls[0].At
	if len(pulls) < 3 || !pulls[1].At.Equal(first) || !pulls[2].At.Equal(first) {
		t.Fatalf("the pulls after an accepted offer waited: %v, %v, %v after the first", pulls[1].At.Sub(first), pulls[2].At.Sub(first), first)
	}
	for i, a := range acks[:4] {
		if !a.At.Equal(first) {
			t.Errorf("ack %d came %s after the offer, want at once", i, a.At.Sub(first))
		}
	}
}
