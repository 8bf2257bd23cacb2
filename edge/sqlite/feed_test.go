package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

var _ edge.EventFeed = (*Store)(nil)

// feedTypes reads the whole feed after pos in batches of 2 (so paging is
// exercised) and returns "run:type" entries and the last position.
func feedTypes(t *testing.T, s *Store, pos int64, names map[string]string) ([]string, int64) {
	t.Helper()
	var out []string
	for {
		evs, err := s.Events(context.Background(), pos, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return out, pos
		}
		for _, e := range evs {
			if e.Position <= pos {
				t.Fatalf("position %d after %d", e.Position, pos)
			}
			pos = e.Position
			out = append(out, names[e.RunID]+":"+string(e.Type))
		}
	}
}

func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestEventFeed: run transitions append to the feed in commit order,
// interleaved across runs; a consumer reads with a cursor, is woken by
// each commit that appended events (and not by one that did not), keeps
// its cursor by compare-and-set, and resumes from it after a re-open.
func TestEventFeed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "edge.db")
	s := openAt(t, path, clock.NewFake(t0))
	task := mustTask(t, s, "a", retrySpec(1, 0, false, "allow"))
	now := t0.UnixMilli()

	if evs, err := s.Events(ctx, 0, 10); err != nil || len(evs) != 0 {
		t.Fatalf("empty feed: %v %v", evs, err)
	}
	wake := s.EventsAppended()
	a := mustRun(t, s, task.ID, "a")
	if !woken(wake) {
		t.Fatal("admission did not wake the feed")
	}
	b := mustRun(t, s, task.ID, "b")
	names := map[string]string{a.ID: "a", b.ID: "b"}
	start(t, s, a, now)

	got, pos := feedTypes(t, s, 0, names)
	want := []string{"a:run.created", "a:run.queued", "b:run.created", "b:run.queued", "a:run.dispatched", "a:run.starting", "a:run.running"}
	if !slices.Equal(got, want) {
		t.Fatalf("feed %v, want %v", got, want)
	}

	// A commit without events (a log size update) wakes nobody.
	wake = s.EventsAppended()
	if err := s.UpdateAttemptLog(ctx, edge.AttemptRef{RunID: a.ID, Number: 1}, 10, false); err != nil {
		t.Fatal(err)
	}
	if woken(wake) {
		t.Fatal("a commit without events woke the feed")
	}
	// Every waiter of a generation is woken by the next append.
	other := s.EventsAppended()
	if _, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: a.ID, Number: 1},
		edge.AttemptResult{Status: run.AttemptFailed, ExitCode: intp(1), ErrorClass: run.ErrorProcessExit, FinishedAtMs: now + 5}); err != nil {
		t.Fatal(err)
	}
	if !woken(wake) || !woken(other) {
		t.Fatal("the finish did not wake every waiter")
	}
	got, last := feedTypes(t, s, pos, names)
	if !slices.Equal(got, []string{"a:run.failed"}) {
		t.Fatalf("feed after %d: %v", pos, got)
	}
	evs, err := s.Events(ctx, pos, 1)
	if err != nil || len(evs) != 1 || evs[0].Payload.ErrorClass != run.ErrorProcessExit || evs[0].Seq != 6 {
		t.Fatalf("terminal event %+v %v", evs, err)
	}

	// The consumer's cursor: stored by compare-and-set.
	if p, err := s.ConsumerPosition(ctx, "notify"); err != nil || p != 0 {
		t.Fatalf("fresh cursor %d %v", p, err)
	}
	if err := s.AdvanceConsumer(ctx, "notify", 0, pos); err != nil {
		t.Fatal(err)
	}
	if err := s.AdvanceConsumer(ctx, "notify", 0, last); errs.Code(err) != errs.Conflict {
		t.Fatalf("stale advance: %v", err)
	}
	s.Close()

	// Re-open: the consumer resumes where it stopped and sees only what
	// it had not handled; new events keep their order after the old ones.
	s = openAt(t, path, clock.NewFake(t0))
	p, err := s.ConsumerPosition(ctx, "notify")
	if err != nil || p != pos {
		t.Fatalf("cursor after re-open %d %v, want %d", p, err, pos)
	}
	c := mustRun(t, s, task.ID, "c")
	names[c.ID] = "c"
	got, end := feedTypes(t, s, p, names)
	if !slices.Equal(got, []string{"a:run.failed", "c:run.created", "c:run.queued"}) {
		t.Fatalf("resumed feed %v", got)
	}
	if err := s.AdvanceConsumer(ctx, "notify", p, end); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.ConsumerPosition(ctx, "notify"); p != end {
		t.Fatalf("cursor %d, want %d", p, end)
	}
}

// TestEventFeedSurvivesPruning: retention removes a run's events from the
// feed too; positions are never reused, so a cursor stays meaningful.
func TestEventFeedSurvivesPruning(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "a", retrySpec(1, 0, false, "allow"))
	now := t0.UnixMilli()
	r := mustRun(t, s, task.ID, "")
	start(t, s, r, now)
	if _, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: r.ID, Number: 1},
		edge.AttemptResult{Status: run.AttemptSucceeded, ExitCode: intp(0), FinishedAtMs: now}); err != nil {
		t.Fatal(err)
	}
	_, last := feedTypes(t, s, 0, nil)
	if n, err := s.PruneRuns(ctx, now+1, 10); err != nil || n != 1 {
		t.Fatalf("prune %d %v", n, err)
	}
	if evs, err := s.Events(ctx, 0, edge.MaxEventBatch); err != nil || len(evs) != 0 {
		t.Fatalf("feed after pruning: %+v %v", evs, err)
	}
	next := mustRun(t, s, task.ID, "")
	evs, err := s.Events(ctx, 0, 10)
	if err != nil || len(evs) != 2 || evs[0].RunID != next.ID || evs[0].Position <= last {
		t.Fatalf("after pruning: %+v (a position at or below %d would be reused): %v", evs, last, err)
	}
}

func TestEventFeedBounds(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	for _, c := range []struct {
		after int64
		limit int
		field string
	}{{0, 0, "limit"}, {0, edge.MaxEventBatch + 1, "limit"}, {-1, 10, "after"}} {
		if _, err := s.Events(ctx, c.after, c.limit); errs.Field(err) != c.field {
			t.Errorf("Events(%d, %d) = %v, want a refusal naming %s", c.after, c.limit, err, c.field)
		}
	}
	for _, name := range []string{"", "has space", fmt.Sprintf("%065d", 0), "ü"} {
		if _, err := s.ConsumerPosition(ctx, name); errs.Field(err) != "consumer" {
			t.Errorf("ConsumerPosition(%q) = %v", name, err)
		}
	}
	if err := s.AdvanceConsumer(ctx, "x", 5, 4); errs.Field(err) != "to" {
		t.Errorf("backwards advance: %v", err)
	}
}
