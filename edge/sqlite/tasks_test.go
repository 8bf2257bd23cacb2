package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

func TestTaskLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)

	task := mustTask(t, s, "backup", shellSpec("echo one"))
	if task.Revision != 1 || !task.Enabled || task.ProjectID != edge.DefaultProjectID || task.Digest.String() == "" {
		t.Fatalf("created %+v", task)
	}
	if _, err := s.CreateTask(ctx, edge.NewTask{Name: "backup", Spec: shellSpec("x")}); errs.Code(err) != errs.Conflict || errs.Field(err) != "name" {
		t.Fatalf("duplicate name: %v", err)
	}

	clk.Advance(time.Second)
	updated, err := s.UpdateTask(ctx, task.ID, 1, edge.TaskUpdate{Name: "backup", Spec: shellSpec("echo two")})
	if err != nil || updated.Revision != 2 || updated.Digest == task.Digest {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	if _, err := s.UpdateTask(ctx, task.ID, 1, edge.TaskUpdate{Name: "backup", Spec: shellSpec("echo three")}); errs.Code(err) != errs.Conflict {
		t.Fatalf("stale revision: %v", err)
	}
	same, err := s.UpdateTask(ctx, task.ID, 2, edge.TaskUpdate{Name: "backup", Spec: shellSpec("echo two")})
	if err != nil || same.Revision != 2 {
		t.Fatalf("unchanged update published: %+v, %v", same, err)
	}
	rev1, err := s.GetTaskRevision(ctx, task.ID, 1)
	if err != nil || rev1.Spec.Shell.Command != "echo one" || rev1.Digest != task.Digest {
		t.Fatalf("revision 1 not kept: %+v, %v", rev1, err)
	}
	if _, err := s.writer.Exec(`UPDATE task_revisions SET spec_json = '{}'`); err == nil {
		t.Fatal("task_revisions accepted an update")
	}

	disabled, err := s.SetTaskEnabled(ctx, task.ID, false)
	if err != nil || disabled.Enabled {
		t.Fatalf("disable: %+v, %v", disabled, err)
	}
	byName, err := s.GetTaskByName(ctx, "backup")
	if err != nil || byName.ID != task.ID {
		t.Fatalf("by name: %+v, %v", byName, err)
	}
	queued := mustRun(t, s, task.ID, "k1") // manual runs of a disabled task are allowed
	if err := s.DeleteTask(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetTaskByName(ctx, "backup"); errs.Code(err) != errs.NotFound {
		t.Fatalf("deleted task found by name: %v", err)
	}
	gone, err := s.GetTask(ctx, task.ID)
	if err != nil || !gone.Deleted() {
		t.Fatalf("deleted task history: %+v, %v", gone, err)
	}
	r, _ := s.GetRun(ctx, queued.ID)
	if r.Status != "cancelled" || r.Reason != edge.ReasonTaskDeleted {
		t.Fatalf("queued run of a deleted task: %+v", r)
	}
	if _, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID}); errs.Code(err) != errs.NotFound {
		t.Fatalf("run of a deleted task: %v", err)
	}
	mustTask(t, s, "backup", shellSpec("true")) // the name is free again
}

func TestCreateTaskRejects(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	cases := []struct {
		name, field string
		in          edge.NewTask
	}{
		{"empty name", "name", edge.NewTask{Name: "", Spec: shellSpec("true")}},
		{"control char", "name", edge.NewTask{Name: "a\nb", Spec: shellSpec("true")}},
		{"long name", "name", edge.NewTask{Name: string(make([]byte, 129)), Spec: shellSpec("true")}},
		{"bad spec", "spec.kind", edge.NewTask{Name: "x", Spec: withKind(shellSpec("true"), "nope")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateTask(context.Background(), tc.in)
			if errs.Code(err) == "" || errs.Field(err) != tc.field {
				t.Fatalf("err = %v (field %q), want field %q", err, errs.Field(err), tc.field)
			}
		})
	}
	page, err := s.ListTasks(context.Background(), edge.TaskFilter{})
	if err != nil || len(page.Tasks) != 0 {
		t.Fatalf("rejected input left rows: %+v, %v", page, err)
	}
}

func TestListTasksPages(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)
	for i := 0; i < 7; i++ {
		mustTask(t, s, string(rune('a'+i)), shellSpec("true"))
		if i%2 == 0 {
			clk.Advance(time.Millisecond) // some share a timestamp: the id breaks ties
		}
	}
	var names []string
	cur := ""
	for pages := 0; ; pages++ {
		page, err := s.ListTasks(ctx, edge.TaskFilter{Limit: 3, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page.Tasks {
			names = append(names, tk.Name)
		}
		if page.NextCursor == "" {
			break
		}
		cur = page.NextCursor
	}
	if got := len(names); got != 7 || names[0] != "a" || names[6] != "g" {
		t.Fatalf("paged names %v", names)
	}
	if _, err := s.ListTasks(ctx, edge.TaskFilter{Limit: edge.MaxPageSize + 1}); errs.Field(err) != "limit" {
		t.Fatalf("oversized limit: %v", err)
	}
	if _, err := s.ListTasks(ctx, edge.TaskFilter{Cursor: "garbage!"}); errs.Field(err) != "cursor" {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestTriggerPublishResetsSchedule(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openTest(t, clk)
	task := mustTask(t, s, "t", shellSpec("true"))

	tr, err := s.CreateTrigger(ctx, task.ID, edge.TriggerInput{Expression: "*/5 * * * * *", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr.TimeZone != "UTC" || tr.Misfire != schedule.MisfireSkip || tr.GraceMs != schedule.DefaultEdgeGraceMs || tr.Schedule.Initialized {
		t.Fatalf("defaults: %+v", tr)
	}
	select {
	case <-s.SchedulesChanged():
	default:
		t.Fatal("creating a trigger did not signal SchedulesChanged")
	}
	items, err := s.DueSchedules(ctx, clk.Now().UnixMilli(), 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("due: %v, %v", items, err)
	}
	d := schedule.Decision{Kind: schedule.Init, NextFireAtMs: t0.Add(5 * time.Second).UnixMilli()}
	adm, err := s.ApplyDecision(ctx, items[0], d, clk.Now().UnixMilli())
	if err != nil || !adm.Schedule.Initialized || adm.Schedule.StateVersion != items[0].Schedule.StateVersion+1 {
		t.Fatalf("init: %+v, %v", adm, err)
	}

	clk.Advance(time.Second)
	tr2, err := s.UpdateTrigger(ctx, tr.ID, 1, edge.TriggerInput{Expression: "0 * * * *", TimeZone: "Europe/Berlin", Misfire: schedule.MisfireFireOnce, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr2.Revision != 2 || tr2.Schedule.Initialized || tr2.Schedule.NextFireAtMs != 0 ||
		tr2.Schedule.TriggerRevision != 2 || tr2.Schedule.StateVersion <= adm.Schedule.StateVersion {
		t.Fatalf("publish did not reset: %+v", tr2.Schedule)
	}
	// A scheduler still holding the old row loses its compare-and-set.
	stale := edge.ScheduleItem{Trigger: items[0].Trigger, Schedule: adm.Schedule}
	fire := schedule.Decision{Kind: schedule.Fire, ScheduledForMs: d.NextFireAtMs, NextFireAtMs: d.NextFireAtMs + 5000}
	if _, err := s.ApplyDecision(ctx, stale, fire, clk.Now().UnixMilli()); errs.Code(err) != errs.Conflict {
		t.Fatalf("stale decision: %v", err)
	}
	page, _ := s.ListRuns(ctx, edge.RunFilter{})
	if len(page.Runs) != 0 {
		t.Fatalf("stale decision admitted %d runs", len(page.Runs))
	}
	if _, err := s.UpdateTrigger(ctx, tr.ID, 1, edge.TriggerInput{Expression: "* * * * *"}); errs.Code(err) != errs.Conflict {
		t.Fatalf("stale trigger revision: %v", err)
	}

	// Disabling the task deactivates, enabling resets.
	if _, err := s.SetTaskEnabled(ctx, task.ID, false); err != nil {
		t.Fatal(err)
	}
	if items, _ := s.DueSchedules(ctx, clk.Now().UnixMilli(), 10); len(items) != 0 {
		t.Fatalf("disabled task still due: %+v", items)
	}
	if _, err := s.SetTaskEnabled(ctx, task.ID, true); err != nil {
		t.Fatal(err)
	}
	if items, _ := s.DueSchedules(ctx, clk.Now().UnixMilli(), 10); len(items) != 1 || items[0].Schedule.Initialized {
		t.Fatalf("re-enabled task not reset: %+v", items)
	}
	if err := s.DeleteTrigger(ctx, tr.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListTriggers(ctx, task.ID); len(got) != 0 {
		t.Fatalf("deleted trigger listed: %+v", got)
	}
	if _, ok, _ := s.NextFireAtMs(ctx, clk.Now().UnixMilli()); ok {
		t.Fatal("deleted trigger still has a next fire time")
	}
}

func TestTriggerInputRejects(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "t", shellSpec("true"))
	cases := []struct {
		name, field string
		in          edge.TriggerInput
	}{
		{"bad cron", "expression", edge.TriggerInput{Expression: "61 * * * *"}},
		{"empty cron", "expression", edge.TriggerInput{Expression: ""}},
		{"unknown zone", "timeZone", edge.TriggerInput{Expression: "* * * * *", TimeZone: "Mars/Olympus"}},
		{"local zone", "timeZone", edge.TriggerInput{Expression: "* * * * *", TimeZone: "Local"}},
		{"bad misfire", "misfire", edge.TriggerInput{Expression: "* * * * *", Misfire: "later"}},
		{"grace too long", "graceMs", edge.TriggerInput{Expression: "* * * * *", GraceMs: schedule.MaxGraceMs + 1}},
		{"negative grace", "graceMs", edge.TriggerInput{Expression: "* * * * *", GraceMs: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateTrigger(context.Background(), task.ID, tc.in)
			if errs.Code(err) != errs.Invalid && errs.Code(err) != errs.TooLarge || errs.Field(err) != tc.field {
				t.Fatalf("err = %v (code %s field %q), want field %q", err, errs.Code(err), errs.Field(err), tc.field)
			}
		})
	}
	if got, _ := s.ListTriggers(context.Background(), task.ID); len(got) != 0 {
		t.Fatalf("rejected triggers stored: %+v", got)
	}
	if _, err := s.CreateTrigger(context.Background(), "no-such-task", edge.TriggerInput{Expression: "* * * * *"}); errs.Code(err) != errs.NotFound {
		t.Fatalf("trigger for a missing task: %v", err)
	}
	// Distinct schedules (one task may not have the same one twice).
	for i := 0; i < maxTriggersPerTask; i++ {
		if _, err := s.CreateTrigger(context.Background(), task.ID, edge.TriggerInput{Expression: fmt.Sprintf("%d %d * * *", i%60, i/60)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateTrigger(context.Background(), task.ID, edge.TriggerInput{Expression: "59 * * * *"}); errs.Code(err) != errs.TooLarge {
		t.Fatalf("trigger beyond the limit: %v", err)
	}
}

// TestCreateTaskWithTriggersIsAtomic: the task and its triggers commit
// together; one bad trigger leaves nothing behind, not even the task name.
func TestCreateTaskWithTriggersIsAtomic(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))

	good := edge.TriggerInput{Expression: "*/5 * * * *", TimeZone: "Europe/London", Enabled: true}
	bad := edge.TriggerInput{Expression: "0 0 30 2 *", Enabled: true} // never fires
	_, err := s.CreateTask(ctx, edge.NewTask{Name: "nightly", Spec: shellSpec("true"), Enabled: true,
		Triggers: []edge.TriggerInput{good, bad}})
	if errs.Code(err) != errs.Invalid || errs.Field(err) != "triggers[1].expression" {
		t.Fatalf("bad trigger: code %q field %q (%v)", errs.Code(err), errs.Field(err), err)
	}
	if _, err := s.GetTaskByName(ctx, "nightly"); errs.Code(err) != errs.NotFound {
		t.Fatalf("a task was left behind: %v", err)
	}

	task, err := s.CreateTask(ctx, edge.NewTask{Name: "nightly", Spec: shellSpec("true"), Enabled: true,
		Triggers: []edge.TriggerInput{good, {Expression: "30 2 * * *", TimeZone: "America/New_York", Enabled: true}}})
	if err != nil {
		t.Fatal(err)
	}
	trs, err := s.ListTriggers(ctx, task.ID)
	if err != nil || len(trs) != 2 {
		t.Fatalf("triggers: %d, %v", len(trs), err)
	}
	for _, tr := range trs {
		if tr.Revision != 1 || tr.Schedule.Initialized || tr.Schedule.TriggerRevision != 1 {
			t.Errorf("trigger not born with an uninitialised schedule: %+v", tr)
		}
	}
}
