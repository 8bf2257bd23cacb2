package dispatch_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/core/placement"
)

// TestPullPinnedToOneWorker: a revision whose placement requires
// placement.WorkerLabel=<worker id> is offered to that worker only — not to
// another worker with the same capabilities, not to one that reports the
// label itself — and its other requirements still apply (ADR 0062).
func TestPullPinnedToOneWorker(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	other := e.worker(linuxCaps(), 4)
	target := e.worker(linuxCaps(), 4)
	spoof := linuxCaps()
	spoof.Labels = map[string]string{placement.WorkerLabel: target.id.String()}
	spoofer := e.worker(spoof, 4)

	pinned := testSpec()
	pinned.Placement = &placement.Requirements{Required: placement.Required{Labels: map[string]string{placement.WorkerLabel: target.id.String()}}}
	r := e.queue(e.revision(pinned), 0)
	for _, w := range []*dispatchWorker{other, spoofer} {
		if o, _ := e.pull(w); o != nil {
			t.Fatalf("worker %s was offered a Run pinned to %s", w.id, target.id)
		}
	}
	o, _ := e.pull(target)
	if o == nil || o.RunID != r.run.String() {
		t.Fatalf("the pinned worker got %+v, want run %s", o, r.run)
	}
	// Pinned and labelled: the worker must also have the label.
	both := testSpec()
	both.Placement = &placement.Requirements{Required: placement.Required{Labels: map[string]string{placement.WorkerLabel: target.id.String(), "zone": "a"}}}
	e.queue(e.revision(both), 0)
	if o, _ := e.pull(target); o != nil {
		t.Fatalf("offered without the zone label: %+v", o)
	}
}
