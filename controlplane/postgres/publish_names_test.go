package postgres_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

// TestAmbiguousNamesRefused: names shaped like ids, without a visible
// character or with bidi controls are refused for every kind of object,
// naming the field.
func TestAmbiguousNamesRefused(t *testing.T) {
	t.Parallel()
	f := newPubFixture(t)
	ctx := context.Background()
	w, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{w.ID, "01A22F0F2E4173B9B6C3069D9BDE2CBB", "   ", "\u200b\u200b", "admin\u202egnp.exe"} {
		if _, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{Name: name}); errs.Code(err) != errs.Invalid || errs.Field(err) != "name" {
			t.Errorf("project %q: %v", name, err)
		}
		if _, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: name}); errs.Code(err) != errs.Invalid || errs.Field(err) != "name" {
			t.Errorf("worker %q: %v", name, err)
		}
		if _, _, err := f.pub.CreateAPIToken(ctx, name, 0); errs.Code(err) != errs.Invalid {
			t.Errorf("token %q: %v", name, err)
		}
	}
	p := mustProject(t, f, "p1")
	if _, err := f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: w.ID, Spec: shellSpec("true")}); errs.Field(err) != "name" {
		t.Errorf("task named like an id: %v", err)
	}
}

// TestDuplicateTriggerRefused: a trigger with the schedule (expression,
// white space collapsed, and zone) of another trigger of the same task is a
// conflict, on create, inline in a task create, and on update; another zone
// or another task is fine, and so is re-publishing a trigger's own schedule.
func TestDuplicateTriggerRefused(t *testing.T) {
	t.Parallel()
	f := newPubFixture(t)
	ctx := context.Background()
	p := mustProject(t, f, "p1")
	task := mustTask(t, f, p.ID, "t1")
	first := mustTrigger(t, f, task.ID) // */5 * * * * Europe/Berlin
	_, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "*/5  * * * *", TimeZone: "Europe/Berlin"})
	if errs.Code(err) != errs.Conflict || errs.Field(err) != "expression" {
		t.Fatalf("identical trigger: %v", err)
	}
	other, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "*/5 * * * *", TimeZone: "Asia/Tokyo"})
	if err != nil {
		t.Fatalf("same expression, another zone: %v", err)
	}
	_, err = f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: other.ID, ExpectedRevision: other.Revision,
		Expression: "*/5 * * * *", TimeZone: "Europe/Berlin"})
	if errs.Code(err) != errs.Conflict {
		t.Fatalf("update onto another trigger's schedule: %v", err)
	}
	if _, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: first.ID, ExpectedRevision: first.Revision,
		Expression: "*/5 * * * *", TimeZone: "Europe/Berlin", Misfire: "fire_once"}); err != nil {
		t.Fatalf("re-publishing a trigger's own schedule: %v", err)
	}
	task2 := mustTask(t, f, p.ID, "t2")
	mustTrigger(t, f, task2.ID)
	_, err = f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: "t3", Spec: shellSpec("true"),
		Triggers: []controlplane.TriggerInput{{Expression: "0 3 * * *"}, {Expression: "0 3 * * *", TimeZone: "UTC"}}})
	if errs.Code(err) != errs.Conflict || errs.Field(err) != "triggers[1].expression" {
		t.Fatalf("identical inline triggers: %v", err)
	}
}
