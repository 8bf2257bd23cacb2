package controlplane_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane"
)

// TestQueueHealth: overloaded exactly when something is queued and the
// oldest queued Run waited longer than the threshold (≤ 0: the default).
func TestQueueHealth(t *testing.T) {
	for _, c := range []struct {
		depth, oldestMs, thresholdMs, wantThreshold int64
		want                                        bool
	}{
		{0, 0, 0, controlplane.DefaultOverloadQueueAgeMs, false},
		{3, controlplane.DefaultOverloadQueueAgeMs, 0, controlplane.DefaultOverloadQueueAgeMs, false},
		{3, controlplane.DefaultOverloadQueueAgeMs + 1, 0, controlplane.DefaultOverloadQueueAgeMs, true},
		{3, 1_001, 1_000, 1_000, true},
		{3, 999, 1_000, 1_000, false},
		{0, 90_000, 1_000, 1_000, false}, // nothing queued: a stale age says nothing
		{1, 90_000, -5, controlplane.DefaultOverloadQueueAgeMs, true},
	} {
		h := controlplane.QueueReport{Depth: c.depth, OldestAgeMs: c.oldestMs}.Health(c.thresholdMs)
		if h.Overloaded != c.want || h.ThresholdMs != c.wantThreshold || h.Depth != c.depth || h.OldestQueuedAgeMs != c.oldestMs {
			t.Errorf("depth %d oldest %d threshold %d: %+v, want overloaded %v at %d", c.depth, c.oldestMs, c.thresholdMs, h,
				c.want, c.wantThreshold)
		}
	}
}
