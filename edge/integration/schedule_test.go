//go:build linux

package integration

import (
	"sort"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
)

const quickSpec = `{"kind":"qinglong/command@v1","argv":{"file":"true"},"concurrency":"allow"}`

// TestEverySecondTriggerOneRunPerSecond: a 6-field every-second trigger
// over 30 one-second steps of the clock admits exactly 30 runs, one per
// second, each with its own scheduled_for and idempotency key.
func TestEverySecondTriggerOneRunPerSecond(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, t.TempDir(), clk)
	task := s.createTask("tick", quickSpec, httpapi.TriggerRequest{Expression: "* * * * * *", TimeZone: "Europe/London"})
	s.waitScheduled(task) // the cursor is t0+1s; nothing fires retroactively
	if n := len(s.runs(task.ID)); n != 0 {
		t.Fatalf("%d runs before the clock moved", n)
	}
	const steps = 30
	for i := 1; i <= steps; i++ {
		s.step(time.Second)
		if n := len(s.runs(task.ID)); n != i {
			t.Fatalf("after step %d: %d runs, want %d", i, n, i)
		}
	}
	runs := s.runs(task.ID)
	sort.Slice(runs, func(i, j int) bool { return runs[i].ScheduledForMs < runs[j].ScheduledForMs })
	keys := map[string]bool{}
	for i, r := range runs {
		want := t0.Add(time.Duration(i+1) * time.Second).UnixMilli()
		if r.ScheduledForMs != want {
			t.Errorf("run %d scheduled for %d, want %d", i, r.ScheduledForMs, want)
		}
		if r.Origin != "schedule" || r.TriggerID != task.Triggers[0].ID {
			t.Errorf("run %d: origin %s trigger %s", i, r.Origin, r.TriggerID)
		}
		if keys[r.IdempotencyKey] {
			t.Errorf("duplicate idempotency key %s", r.IdempotencyKey)
		}
		keys[r.IdempotencyKey] = true
	}
	// Every run executes (true exits 0).
	for _, r := range runs {
		s.waitRun(r.ID, "to succeed", status("succeeded"))
	}
}

// TestMisfireAcrossDowntime: ql3-edge is down for 10 minutes. On restart a
// skip trigger admits nothing for the missed minutes; a fire_once trigger
// admits exactly one run, for the oldest missed occurrence. Neither replays
// the backlog, and both continue normally afterwards.
func TestMisfireAcrossDowntime(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	s := startServer(t, dir, clk)
	skip := s.createTask("skipper", quickSpec, httpapi.TriggerRequest{Expression: "* * * * *", Misfire: "skip"})
	once := s.createTask("once", quickSpec, httpapi.TriggerRequest{Expression: "* * * * *", Misfire: "fire_once"})
	s.waitScheduled(skip)
	s.waitScheduled(once)
	s.step(time.Minute) // 12:01 fires both
	for _, task := range []httpapi.Task{skip, once} {
		runs := s.runs(task.ID)
		if len(runs) != 1 || runs[0].ScheduledForMs != t0.Add(time.Minute).UnixMilli() {
			t.Fatalf("%s before the downtime: %+v", task.Name, runs)
		}
		s.waitRun(runs[0].ID, "to succeed", status("succeeded"))
	}
	s.close()

	// Ten minutes pass with the server down (12:01 → 12:11:10: the 12:02
	// occurrence is 9 min 10 s late, far beyond the 30 s grace).
	clk.Advance(10*time.Minute + 10*time.Second)
	s = startServer(t, dir, clk)
	s.settle()

	skipRuns := s.runs(skip.ID)
	if len(skipRuns) != 1 {
		t.Errorf("skip after downtime: %d runs, want 1 (none for the missed minutes)", len(skipRuns))
	}
	onceRuns := s.runs(once.ID)
	if len(onceRuns) != 2 {
		t.Fatalf("fire_once after downtime: %d runs, want 2", len(onceRuns))
	}
	if got, want := onceRuns[0].ScheduledForMs, t0.Add(2*time.Minute).UnixMilli(); got != want {
		t.Errorf("fire_once caught up occurrence %d, want the oldest missed one %d", got, want)
	}
	var trig httpapi.Trigger
	s.api("GET", "/api/v1/tasks/skipper/triggers/"+skip.Triggers[0].ID, nil, 200, &trig)
	if trig.MissedTotal < 9 {
		t.Errorf("skip trigger counted %d missed occurrences, want >= 9", trig.MissedTotal)
	}

	// Normal service resumes at 12:12.
	s.step(50 * time.Second)
	if n := len(s.runs(skip.ID)); n != 2 {
		t.Errorf("skip at 12:12: %d runs, want 2", n)
	}
	if n := len(s.runs(once.ID)); n != 3 {
		t.Errorf("fire_once at 12:12: %d runs, want 3", n)
	}
	for _, task := range []httpapi.Task{skip, once} {
		for _, r := range s.runs(task.ID) {
			s.waitRun(r.ID, "to succeed", status("succeeded"))
		}
	}
}
