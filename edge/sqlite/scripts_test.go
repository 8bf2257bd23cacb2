package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// randomDelayMs: a scheduled occurrence waits a delay that is a function
// of its idempotency key, recorded on the Run and added to NotBeforeMs;
// run-now starts at once.
func TestRandomDelayAtAdmission(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)
	sp := spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: "a.js"}, RandomDelayMs: 300_000}.WithDefaults()
	task := mustTask(t, s, "delayed", sp)
	tr, err := s.CreateTrigger(ctx, task.ID, edge.TriggerInput{Expression: "* * * * *", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	items, err := s.DueSchedules(ctx, clk.Now().UnixMilli(), 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("due: %v %v", items, err)
	}
	at := t0.Add(time.Minute).UnixMilli()
	adm, err := s.ApplyDecision(ctx, items[0], schedule.Decision{Kind: schedule.Init, NextFireAtMs: at}, clk.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	item := edge.ScheduleItem{Trigger: items[0].Trigger, Schedule: adm.Schedule}
	adm, err = s.ApplyDecision(ctx, item, schedule.Decision{Kind: schedule.Fire, ScheduledForMs: at, NextFireAtMs: at + 60_000}, clk.Now().UnixMilli())
	if err != nil || adm.RunID == "" {
		t.Fatalf("fire: %+v %v", adm, err)
	}
	r, err := s.GetRun(ctx, adm.RunID)
	if err != nil {
		t.Fatal(err)
	}
	want := scriptpath.RandomDelayMs(schedule.IdempotencyKey(tr.ID, tr.Revision, at), 300_000)
	if r.RandomDelayMs != want || r.NotBeforeMs != at+want {
		t.Fatalf("run delay %d not before %d; want %d and %d", r.RandomDelayMs, r.NotBeforeMs, want, at+want)
	}
	if due, _ := s.ListDueRuns(ctx, at+want-1, 10); len(due) != 0 {
		t.Fatalf("due before its delay: %+v", due)
	}
	if due, _ := s.ListDueRuns(ctx, at+want, 10); len(due) != 1 {
		t.Fatalf("not due after its delay: %+v", due)
	}
	manual := mustRun(t, s, task.ID, "")
	if manual.RandomDelayMs != 0 || manual.NotBeforeMs != clk.Now().UnixMilli() {
		t.Fatalf("run-now was delayed: %+v", manual)
	}
}
