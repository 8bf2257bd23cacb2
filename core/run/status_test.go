package run

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// The expected state machines, written out independently of the tables in
// status.go: every pair of statuses is checked against these lists, so an
// added, removed or misspelt edge fails the test.
var wantRunStatuses = []string{"created", "queued", "dispatching", "running", "retry_wait",
	"lost", "succeeded", "failed", "cancelled", "timed_out"}

var wantRunEdges = map[string]bool{
	"created->queued":         true,
	"created->cancelled":      true,
	"queued->dispatching":     true,
	"queued->cancelled":       true,
	"queued->timed_out":       true,
	"dispatching->queued":     true,
	"dispatching->running":    true,
	"dispatching->retry_wait": true,
	"dispatching->failed":     true,
	"dispatching->cancelled":  true,
	"dispatching->lost":       true,
	"dispatching->timed_out":  true,
	"running->succeeded":      true,
	"running->failed":         true,
	"running->cancelled":      true,
	"running->timed_out":      true,
	"running->lost":           true,
	"running->retry_wait":     true,
	"retry_wait->queued":      true,
	"retry_wait->cancelled":   true,
	"retry_wait->timed_out":   true,
	"lost->retry_wait":        true,
	"lost->failed":            true,
	"lost->cancelled":         true,
}

var wantRunTerminal = map[string]bool{"succeeded": true, "failed": true, "cancelled": true, "timed_out": true}

var wantAttemptStatuses = []string{"claimed", "starting", "running", "succeeded", "failed",
	"cancelled", "timed_out", "lost"}

var wantAttemptEdges = map[string]bool{
	"claimed->starting":   true,
	"claimed->cancelled":  true,
	"claimed->lost":       true,
	"starting->running":   true,
	"starting->failed":    true,
	"starting->cancelled": true,
	"starting->timed_out": true,
	"starting->lost":      true,
	"running->succeeded":  true,
	"running->failed":     true,
	"running->cancelled":  true,
	"running->timed_out":  true,
	"running->lost":       true,
}

var wantAttemptTerminal = map[string]bool{"succeeded": true, "failed": true, "cancelled": true,
	"timed_out": true, "lost": true}

func TestRunStatusesAreExactlyTheDesignSet(t *testing.T) {
	got := RunStatuses()
	if len(got) != len(wantRunStatuses) || RunStatus("paused").Valid() || RunStatus("").Valid() {
		t.Fatalf("RunStatuses() has %d, want %d; or an unknown status is valid", len(got), len(wantRunStatuses))
	}
	for i, s := range got {
		if string(s) != wantRunStatuses[i] {
			t.Errorf("RunStatuses()[%d] = %q, want %q", i, s, wantRunStatuses[i])
		}
		if !s.Valid() {
			t.Errorf("%q not Valid", s)
		}
	}
}

func TestEveryRunPairAgainstTable(t *testing.T) {
	seen := 0
	// Include an unknown status on both sides: it may go nowhere.
	all := append(append([]string{}, wantRunStatuses...), "unknown", "")
	for _, from := range all {
		for _, to := range all {
			key := from + "->" + to
			want := wantRunEdges[key]
			if want {
				seen++
			}
			if got := RunTransitionAllowed(RunStatus(from), RunStatus(to)); got != want {
				t.Errorf("RunTransitionAllowed(%s) = %v, want %v", key, got, want)
			}
			err := Transition(RunStatus(from), RunStatus(to))
			switch {
			case want && err != nil:
				t.Errorf("Transition(%s) = %v, want nil", key, err)
			case !want && err == nil:
				t.Errorf("Transition(%s) = nil, want an error", key)
			case !want:
				wantCode := errs.Conflict
				if !RunStatus(from).Valid() || !RunStatus(to).Valid() {
					wantCode = errs.Invalid
				}
				if errs.Code(err) != wantCode || errs.Field(err) != "status" {
					t.Errorf("Transition(%s) = %v (code %q, field %q), want code %q field status",
						key, err, errs.Code(err), errs.Field(err), wantCode)
				}
			}
		}
	}
	if seen != len(wantRunEdges) {
		t.Fatalf("expected edge list names statuses outside the set: %d of %d edges visited", seen, len(wantRunEdges))
	}
}

func TestRunTerminal(t *testing.T) {
	for _, s := range append(append([]string{}, wantRunStatuses...), "unknown") {
		if got := RunStatus(s).Terminal(); got != wantRunTerminal[s] {
			t.Errorf("RunStatus(%q).Terminal() = %v, want %v", s, got, wantRunTerminal[s])
		}
	}
	if RunLost.Terminal() {
		t.Error("lost must not be terminal for Runs")
	}
}

func TestAttemptStatusesAreExactlyTheDesignSet(t *testing.T) {
	got := AttemptStatuses()
	if len(got) != len(wantAttemptStatuses) || AttemptStatus("paused").Valid() || AttemptStatus("").Valid() {
		t.Fatalf("AttemptStatuses() has %d, want %d; or an unknown status is valid", len(got), len(wantAttemptStatuses))
	}
	for i, s := range got {
		if string(s) != wantAttemptStatuses[i] {
			t.Errorf("AttemptStatuses()[%d] = %q, want %q", i, s, wantAttemptStatuses[i])
		}
	}
}

func TestEveryAttemptPairAgainstTable(t *testing.T) {
	seen := 0
	all := append(append([]string{}, wantAttemptStatuses...), "queued", "")
	for _, from := range all {
		for _, to := range all {
			key := from + "->" + to
			want := wantAttemptEdges[key]
			if want {
				seen++
			}
			if got := AttemptTransitionAllowed(AttemptStatus(from), AttemptStatus(to)); got != want {
				t.Errorf("AttemptTransitionAllowed(%s) = %v, want %v", key, got, want)
			}
			err := TransitionAttempt(AttemptStatus(from), AttemptStatus(to))
			switch {
			case want && err != nil:
				t.Errorf("TransitionAttempt(%s) = %v, want nil", key, err)
			case !want && err == nil:
				t.Errorf("TransitionAttempt(%s) = nil, want an error", key)
			case !want:
				wantCode := errs.Conflict
				if !AttemptStatus(from).Valid() || !AttemptStatus(to).Valid() {
					wantCode = errs.Invalid
				}
				if errs.Code(err) != wantCode {
					t.Errorf("TransitionAttempt(%s) code %q, want %q", key, errs.Code(err), wantCode)
				}
			}
		}
	}
	if seen != len(wantAttemptEdges) {
		t.Fatalf("%d of %d expected edges visited", seen, len(wantAttemptEdges))
	}
}

func TestAttemptTerminal(t *testing.T) {
	for _, s := range append(append([]string{}, wantAttemptStatuses...), "queued") {
		if got := AttemptStatus(s).Terminal(); got != wantAttemptTerminal[s] {
			t.Errorf("AttemptStatus(%q).Terminal() = %v, want %v", s, got, wantAttemptTerminal[s])
		}
	}
}

func TestParseStatus(t *testing.T) {
	for _, s := range wantRunStatuses {
		if got, err := ParseRunStatus(s); err != nil || string(got) != s {
			t.Errorf("ParseRunStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range wantAttemptStatuses {
		if got, err := ParseAttemptStatus(s); err != nil || string(got) != s {
			t.Errorf("ParseAttemptStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "Queued", "queued ", "claimed"} {
		if _, err := ParseRunStatus(bad); errs.Code(err) != errs.Invalid {
			t.Errorf("ParseRunStatus(%q) = %v, want invalid", bad, err)
		}
	}
	for _, bad := range []string{"", "Running", "queued", "retry_wait"} {
		if _, err := ParseAttemptStatus(bad); errs.Code(err) != errs.Invalid {
			t.Errorf("ParseAttemptStatus(%q) = %v, want invalid", bad, err)
		}
	}
}

// Every non-terminal status reaches a terminal one, and every status is
// reachable from created (Runs) or claimed (Attempts): no dead or orphan
// states hide in the tables.
func TestStateMachinesAreConnected(t *testing.T) {
	reach := map[RunStatus]bool{RunCreated: true}
	for changed := true; changed; {
		changed = false
		for from := range reach {
			next, _ := runNext(from)
			for _, to := range next {
				if !reach[to] {
					reach[to], changed = true, true
				}
			}
		}
	}
	for _, s := range RunStatuses() {
		if !reach[s] {
			t.Errorf("run status %s unreachable from created", s)
		}
		if !s.Terminal() && !runReachesTerminal(s, map[RunStatus]bool{}) {
			t.Errorf("run status %s never reaches a terminal status", s)
		}
	}
	areach := map[AttemptStatus]bool{AttemptClaimed: true}
	for changed := true; changed; {
		changed = false
		for from := range areach {
			next, _ := attemptNext(from)
			for _, to := range next {
				if !areach[to] {
					areach[to], changed = true, true
				}
			}
		}
	}
	for _, s := range AttemptStatuses() {
		if !areach[s] {
			t.Errorf("attempt status %s unreachable from claimed", s)
		}
	}
}

func runReachesTerminal(s RunStatus, seen map[RunStatus]bool) bool {
	if s.Terminal() {
		return true
	}
	seen[s] = true
	next, _ := runNext(s)
	for _, to := range next {
		if !seen[to] && runReachesTerminal(to, seen) {
			return true
		}
	}
	return false
}

// FuzzTransition: for any pair of strings, Transition agrees with the edge
// table (wantRunEdges), refuses unknown statuses as invalid and never
// allows a status to move to itself.
func FuzzTransition(f *testing.F) {
	for _, from := range wantRunStatuses {
		for _, to := range wantRunStatuses {
			f.Add(from, to)
		}
	}
	f.Add("", "queued")
	f.Add("queued", "QUEUED")
	f.Fuzz(func(t *testing.T, from, to string) {
		err := Transition(RunStatus(from), RunStatus(to))
		known := RunStatus(from).Valid() && RunStatus(to).Valid()
		switch {
		case !known:
			if errs.Code(err) != errs.Invalid {
				t.Fatalf("Transition(%q, %q) = %v, want invalid", from, to, err)
			}
		case wantRunEdges[from+"->"+to]:
			if err != nil || from == to {
				t.Fatalf("Transition(%q, %q) = %v, want allowed", from, to, err)
			}
		default:
			if errs.Code(err) != errs.Conflict {
				t.Fatalf("Transition(%q, %q) = %v, want conflict", from, to, err)
			}
		}
	})
}
