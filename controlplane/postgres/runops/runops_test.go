package runops_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

func ops(f lifeFixture) *runops.RunOps { return runops.NewRunOps(f.Runtime) }

// TestCancelQueuedIsImmediate: a queued Run is cancelled by the request
// itself, its claimed Attempt too, with one run.cancel_requested.
func TestCancelQueuedIsImmediate(t *testing.T) {
	f := newLifeFixture(t)
	runID, _ := f.Run(t, lifeRun{Status: "queued", Attempt: "claimed"})
	out, err := ops(f).CancelRun(context.Background(), runID.String(), "tok-1")
	if err != nil || out != controlplane.CancelAccepted {
		t.Fatalf("cancel: %q %v", out, err)
	}
	if got := f.State(t, runID); got.Status != "cancelled" || got.Attempt != "cancelled" {
		t.Fatalf("state %+v", got)
	}
	if ev := f.Events(t, runID); !slices.Equal(ev, []string{"run.cancel_requested", "run.cancelled"}) {
		t.Fatalf("events %v", ev)
	}
	out, err = ops(f).CancelRun(context.Background(), runID.String(), "tok-1")
	if err != nil || out != controlplane.CancelAlreadyFinished {
		t.Fatalf("repeat: %q %v", out, err)
	}
	if _, err := ops(f).CancelRun(context.Background(), "01a22f1a-0000-7000-8000-000000000000", "x"); errs.Code(err) != errs.NotFound {
		t.Fatalf("missing run: %v", err)
	}
}

// TestCancelRunningStopsAtNextHeartbeat: a running Run gets the intent
// (one event however often it is asked) and its worker's next heartbeat
// renewal answers cancel for that Attempt.
func TestCancelRunningStopsAtNextHeartbeat(t *testing.T) {
	f := newLifeFixture(t)
	ctx := context.Background()
	runID, attemptID := f.Run(t, lifeRun{Status: "running", Attempt: "running", Lease: "live"})
	d, err := dispatch.NewDispatcher(f.Runtime, dispatch.DispatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := controlplane.Principal{WorkerID: f.WorkerID.String()}
	controls, err := d.RenewForHeartbeat(ctx, p, f.SessionID.String(), 1, []string{attemptID.String()})
	if err != nil || len(controls) != 1 || controls[0].Action != protocol.LeaseExtend {
		t.Fatalf("before cancel: %+v %v", controls, err)
	}
	for i, want := range []controlplane.CancelOutcome{controlplane.CancelAccepted, controlplane.CancelAlreadyRequested, controlplane.CancelAlreadyRequested} {
		out, err := ops(f).CancelRun(ctx, runID.String(), "tok-1")
		if err != nil || out != want {
			t.Fatalf("cancel %d: %q %v, want %q", i, out, err, want)
		}
	}
	if got := f.State(t, runID); got.Status != "running" || got.Lease != "leased" {
		t.Fatalf("state %+v", got)
	}
	if ev := f.Events(t, runID); !slices.Equal(ev, []string{"run.cancel_requested"}) {
		t.Fatalf("events %v", ev)
	}
	controls, err = d.RenewForHeartbeat(ctx, p, f.SessionID.String(), 1, []string{attemptID.String()})
	if err != nil || len(controls) != 1 || controls[0].Action != protocol.LeaseCancel {
		t.Fatalf("after cancel: %+v %v", controls, err)
	}
}

// TestCancelAfterLostEndsCancelled: a lost Run (retry allowed) that is
// cancelled ends cancelled, never retried.
func TestCancelAfterLostEndsCancelled(t *testing.T) {
	f := newLifeFixture(t)
	runID, _ := f.Run(t, lifeRun{Status: "lost", Attempt: "lost", RetryOnLost: true})
	if out, err := ops(f).CancelRun(context.Background(), runID.String(), "tok-1"); err != nil || out != controlplane.CancelAccepted {
		t.Fatalf("cancel: %q %v", out, err)
	}
	if got := f.State(t, runID); got.Status != "cancelled" || got.AttemptCount != 1 {
		t.Fatalf("state %+v", got)
	}
	if rep := f.Sweep(t); rep.Changed() != 0 {
		t.Fatalf("sweep after cancel %+v", rep)
	}
}

// TestRunNowIdempotencyKey: the same key and request return the same Run;
// the same key with another request is a conflict naming the field.
func TestRunNowIdempotencyKey(t *testing.T) {
	f := newLifeFixture(t).WithPolicy(t, spec.ConcurrencyAllow)
	ctx := context.Background()
	in := controlplane.RunNowInput{TaskID: f.TaskID, IdempotencyKey: "k-1", Actor: "tok-1"}
	first, err := ops(f).RunNow(ctx, in)
	if err != nil || !first.Created || first.Status != "queued" {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := ops(f).RunNow(ctx, in)
	if err != nil || again.Created || again.RunID != first.RunID {
		t.Fatalf("again: %+v %v", again, err)
	}
	other := in
	other.RerunOf = first.RunID
	if _, err := ops(f).RunNow(ctx, other); errs.Code(err) != errs.Conflict || errs.Field(err) != "idempotencyKey" {
		t.Fatalf("different body: %v", err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE task_id = $1`, f.TaskID); n != 1 {
		t.Fatalf("%d runs", n)
	}
	second, err := ops(f).RunNow(ctx, controlplane.RunNowInput{TaskID: f.TaskID, IdempotencyKey: "k-2", RerunOf: first.RunID})
	if err != nil || !second.Created || second.RunID == first.RunID {
		t.Fatalf("rerun: %+v %v", second, err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE run_id = $1 AND origin = 'rerun' AND rerun_of_run_id = $2`,
		second.RunID, first.RunID); n != 1 {
		t.Fatal("rerun not recorded")
	}
	if _, err := ops(f).RunNow(ctx, controlplane.RunNowInput{TaskID: "01a22f1a-0000-7000-8000-000000000000", IdempotencyKey: "k"}); errs.Code(err) != errs.NotFound {
		t.Fatalf("missing task: %v", err)
	}
}

// TestRunNowAppliesForbid: run-now while a Run of a forbid task is active
// is admitted as skipped.
func TestRunNowAppliesForbid(t *testing.T) {
	f := newLifeFixture(t).WithPolicy(t, spec.ConcurrencyForbid)
	f.Run(t, lifeRun{Status: "running", Attempt: "running", Lease: "live"})
	res, err := ops(f).RunNow(context.Background(), controlplane.RunNowInput{TaskID: f.TaskID, IdempotencyKey: "k"})
	if err != nil || !res.Created || res.Status != "cancelled" {
		t.Fatalf("run-now: %+v %v", res, err)
	}
}
