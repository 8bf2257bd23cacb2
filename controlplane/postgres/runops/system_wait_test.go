package runops

import (
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/placement/matcher"
)

// TestWaitIgnoresTheOtherKindOfSession: the control plane's subscription
// executor is no worker for an ordinary Run (no live session), and a
// worker is none for a pull (ADR 0061).
func TestWaitIgnoresTheOtherKindOfSession(t *testing.T) {
	system := liveSession{caps: `{"os":"linux","arch":"amd64","executors":["` + placement.SubscriptionExecutor + `"]}`, capacity: 1}
	worker := liveSession{caps: `{"os":"linux","arch":"amd64","executors":["shell"]}`, capacity: 2}
	pull, err := matcher.Compile(placement.Requirements{Required: placement.Required{Executors: []string{placement.SubscriptionExecutor}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		m        *matcher.Matcher
		sessions []liveSession
		reason   string
		live     int
	}{
		{"ordinary run, only the executor", nil, []liveSession{system}, controlplane.WaitNoLiveSession, 0},
		{"ordinary run, a worker too", nil, []liveSession{system, worker}, controlplane.WaitForPull, 1},
		{"pull, only a worker", pull, []liveSession{worker}, controlplane.WaitNoLiveSession, 0},
		{"pull, the executor", pull, []liveSession{worker, system}, controlplane.WaitForPull, 1},
	} {
		w := placementWait(revPlacement{m: c.m}, c.sessions, false)
		if w.Reason != c.reason || w.LiveSessions != c.live {
			t.Errorf("%s: %+v", c.name, w)
		}
	}
}
