package scriptstore_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/core/scriptpath"
)

// TestAdmissionAppliesRandomDelay: a scheduled occurrence of a task with
// randomDelayMs gets core/scriptpath.RandomDelayMs of its idempotency key
// as its delay, recorded on the Run (randomDelayMs) and added to its
// not-before time, so no worker is offered it earlier.
func TestAdmissionAppliesRandomDelay(t *testing.T) {
	t.Parallel()
	f := pgfixture.NewSched(t)
	ctx := context.Background()
	task, err := f.Pub.GetTask(ctx, f.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	cmd := task.Spec
	cmd.RandomDelayMs = 600_000
	if _, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{TaskID: f.TaskID, ExpectedRevision: task.Revision, Name: task.Name, Spec: cmd}); err != nil {
		t.Fatal(err)
	}
	_, adm := f.DueAdmission(t)
	pgfixture.Admit(t, f, adm)
	var key string
	var delay, notBefore, created int64
	if err := f.SU.QueryRow(ctx, `SELECT idempotency_key, random_delay_ms, not_before_ms, created_at_ms FROM ql3.runs WHERE task_id = $1::uuid`,
		f.TaskID).Scan(&key, &delay, &notBefore, &created); err != nil {
		t.Fatal(err)
	}
	if want := scriptpath.RandomDelayMs(key, cmd.RandomDelayMs); delay != want || notBefore != created+want {
		t.Errorf("delay %d (want %d), not before %d (created %d)", delay, want, notBefore, created)
	}
	runs, err := f.Pub.ListRuns(ctx, controlplane.RunListFilter{TaskID: f.TaskID})
	if err != nil || len(runs.Items) != 1 || runs.Items[0].RandomDelayMs != delay {
		t.Fatalf("the Run shows %+v %v", runs.Items, err)
	}
}
