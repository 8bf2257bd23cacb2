package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
)

// spoilingStore makes chosen members of each ApplyDecisions batch fail: a
// stale state version (a lost compare-and-set) for the stale trigger, an
// error of its own for the broken one.
type spoilingStore struct {
	*sqlite.Store
	stale, broken string
}

func (s *spoilingStore) ApplyDecisions(ctx context.Context, batch []edge.Decided, nowMs int64) []edge.DecisionResult {
	var keep []edge.Decided
	var at []int
	out := make([]edge.DecisionResult, len(batch))
	for i, b := range batch {
		switch b.Item.Trigger.ID {
		case s.stale:
			b.Item.Schedule.StateVersion--
		case s.broken:
			out[i].Err = errs.E(errs.Unavailable, "", "disk is full")
			continue
		}
		keep = append(keep, b)
		at = append(at, i)
	}
	for j, r := range s.Store.ApplyDecisions(ctx, keep, nowMs) {
		out[at[j]] = r
	}
	return out
}

func TestRoundKeepsTheOthersWhenAMemberFails(t *testing.T) {
	clk := clock.NewFake(t0)
	s := openStore(t, filepath.Join(t.TempDir(), "edge.db"), clk)
	var ids []string
	for i := range 6 {
		ids = append(ids, addTrigger(t, s, fmt.Sprintf("m%d", i), edge.TriggerInput{Expression: "* * * * * *"}).ID)
	}
	store := &spoilingStore{Store: s}
	var admitted []string
	sc, err := New(Config{Store: store, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		OnAdmitted: func(id string) { admitted = append(admitted, id) }})
	if err != nil {
		t.Fatal(err)
	}
	if r := round(t, sc); r.Read != 6 || r.Admitted != 0 { // initialise
		t.Fatalf("init round: %+v", r)
	}
	commits0, _ := s.WriteGroups()
	store.stale, store.broken = ids[1], ids[4]
	clk.Advance(time.Second)
	r, err := sc.RunRound(context.Background())
	if errs.Code(err) != errs.Unavailable || r.Admitted != 4 || r.Conflicts != 1 {
		t.Fatalf("round with a stale and a broken member: %+v %v", r, err)
	}
	if commits, _ := s.WriteGroups(); commits-commits0 != 1 {
		t.Fatalf("the round took %d commits, want 1", commits-commits0)
	}
	if len(admitted) != 4 || len(allRuns(t, s)) != 4 {
		t.Fatalf("admitted %v, runs %d", admitted, len(allRuns(t, s)))
	}
	// The two that failed are still due and are admitted once next round;
	// the others are not admitted again.
	store.stale, store.broken = "", ""
	if r := round(t, sc); r.Read != 2 || r.Admitted != 2 || r.Conflicts != 0 {
		t.Fatalf("next round: %+v", r)
	}
	runs := allRuns(t, s)
	keys := map[string]bool{}
	for _, run := range runs {
		keys[run.IdempotencyKey] = true
	}
	if len(runs) != 6 || len(keys) != 6 {
		t.Fatalf("%d runs, %d keys; want 6 of each", len(runs), len(keys))
	}
}
