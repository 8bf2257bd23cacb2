package postgres_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// TestAmbiguousNamesRefused: names shaped like ids, without a visible
// character or with bidi controls are refused for every kind of object,
// naming the field.
func TestAmbiguousNamesRefused(t *testing.T) {
	t.Parallel()
	f := newPubFixture(t)
	ctx := context.Background()
	w, err := f.pub.RegisterWorker(ctx, postgres.WorkerInput{Name: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{w.ID, "01A22F0F2E4173B9B6C3069D9BDE2CBB", "   ", "\u200b\u200b", "admin\u202egnp.exe"} {
		if _, err := f.pub.PublishProject(ctx, postgres.ProjectInput{Name: name}); errs.Code(err) != errs.Invalid || errs.Field(err) != "name" {
			t.Errorf("project %q: %v", name, err)
		}
		if _, err := f.pub.RegisterWorker(ctx, postgres.WorkerInput{Name: name}); errs.Code(err) != errs.Invalid || errs.Field(err) != "name" {
			t.Errorf("worker %q: %v", name, err)
		}
		if _, _, err := f.pub.CreateAPIToken(ctx, name, 0); errs.Code(err) != errs.Invalid {
			t.Errorf("token %q: %v", name, err)
		}
	}
	p := mustProject(t, f, "p1")
	if _, err := f.pub.PublishTask(ctx, postgres.TaskInput{ProjectID: p.ID, Name: w.ID, Spec: shellSpec("true")}); errs.Field(err) != "name" {
		t.Errorf("task named like an id: %v", err)
	}
}
