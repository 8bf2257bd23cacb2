package publication_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestDisplayNamesCountCharacters: names follow the one rule of both
// binaries (core/names.CheckDisplay): 128 characters, not bytes. A
// 50-character Chinese name (150 bytes) and an emoji name are accepted for
// every kind of object and read back as stored; a name given in NFD is
// stored in NFC; 129 characters are refused naming the field.
func TestDisplayNamesCountCharacters(t *testing.T) {
	t.Parallel()
	f := newPubFixture(t)
	ctx := context.Background()
	cjk := strings.Repeat("京东签到", 12) + "任务" // 50 characters, 150 bytes
	if utf8.RuneCountInString(cjk) != 50 || len(cjk) != 150 {
		t.Fatalf("fixture: %d characters, %d bytes", utf8.RuneCountInString(cjk), len(cjk))
	}
	emoji := "🚀 deploy 👨‍👩‍👧 ❤️"
	for i, name := range []string{cjk, emoji} {
		p, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{Name: name})
		if err != nil || p.Name != name {
			t.Fatalf("project %q: %+v, %v", name, p, err)
		}
		task, err := f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: name, Spec: shellSpec("true")})
		if err != nil || task.Name != name {
			t.Fatalf("task %q: %+v, %v", name, task, err)
		}
		if got, err := f.pub.GetTask(ctx, task.ID); err != nil || got.Name != name {
			t.Fatalf("task %q read back: %q, %v", name, got.Name, err)
		}
		tr, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Name: name, Expression: "*/5 * * * *"})
		if err != nil || tr.Name != name {
			t.Fatalf("trigger %q: %+v, %v", name, tr, err)
		}
		w, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: name, TLSIdentity: fmt.Sprintf("spiffe://ql3/worker/w%d", i)})
		if err != nil || w.Name != name {
			t.Fatalf("worker %q: %+v, %v", name, w, err)
		}
		if tok, _, err := f.pub.CreateAPIToken(ctx, name, 0); err != nil || tok.Name != name {
			t.Fatalf("token %q: %+v, %v", name, tok, err)
		}
	}
	nfd, nfc := "cafe\u0301 tasks", "caf\u00e9 tasks"
	if p, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{Name: nfd}); err != nil || p.Name != nfc {
		t.Fatalf("NFD name stored as %q (%v), want the NFC %q", p.Name, err, nfc)
	}
	if _, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{Name: nfc}); errs.Code(err) != errs.Conflict {
		t.Fatalf("the same name in NFC after NFD: %v, want a conflict (one name, not a lookalike)", err)
	}
	long := strings.Repeat("任", 129)
	p := mustProject(t, f, "p-long")
	for what, err := range map[string]error{
		"project": func() error { _, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{Name: long}); return err }(),
		"task": func() error {
			_, err := f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: long, Spec: shellSpec("true")})
			return err
		}(),
		"worker": func() error { _, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: long}); return err }(),
		"token":  func() error { _, _, err := f.pub.CreateAPIToken(ctx, long, 0); return err }(),
	} {
		if errs.Code(err) != errs.Invalid || errs.Field(err) != "name" || !strings.Contains(err.Error(), "129") {
			t.Errorf("%s named with 129 characters: %v, want invalid name naming 129", what, err)
		}
	}
}
