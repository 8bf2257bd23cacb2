package depstore_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/depstore"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/spec"
)

type fixture struct {
	pgfixture.Life
	store *depstore.Store
	ops   *runops.RunOps
	zoned uuid.UUID // a second worker, labelled zone=a
}

func newFixture(t *testing.T) fixture {
	f := fixture{Life: pgfixture.NewLife(t), zoned: uuid.New()}
	f.store = depstore.New(f.DB.Pool(t, postgres.RoleAdmin))
	f.ops = runops.NewRunOps(f.Runtime)
	f.Exec(t, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms) VALUES ($1::uuid, 'zoned', 'active', 1, 1)`, f.zoned)
	f.Session(t, uuid.New(), f.zoned, 1, "online", 60_000)
	f.Exec(t, `UPDATE ql3.worker_sessions SET capabilities = '{"labels":{"zone":"a","ql3.worker":"x"}}' WHERE worker_id = $1::uuid`, f.zoned)
	return f
}

// workerTask publishes the system task of a dependency on one worker, as
// the admin API does: the action's line, pinned to the worker.
func (f fixture) workerTask(t *testing.T, name string, worker uuid.UUID) string {
	t.Helper()
	off := false
	c := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "true"}, Concurrency: spec.ConcurrencyForbid,
		Placement: &placement.Requirements{Required: placement.Required{Labels: map[string]string{controlplane.WorkerLabel: worker.String()}}}}.WithDefaults()
	task, err := f.Pub.PublishTask(context.Background(), controlplane.TaskInput{ProjectID: f.ProjectID, Name: name, Enabled: &off, Spec: c})
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func TestDependencyRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		in    controlplane.DependencyInput
		field string
	}{
		{controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "ruby", Name: "x"}, "kind"},
		{controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "node", Name: "a b"}, "name"},
		{controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "node", Name: "x", Version: "-1"}, "version"},
		{controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "node", Name: "x", Labels: map[string]string{"Bad Label": "1"}}, "labels"},
		{controlplane.DependencyInput{ProjectID: "nope", Kind: "node", Name: "x"}, "projectId"},
	} {
		if _, err := f.store.CreateDependency(ctx, tc.in); errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field && !(tc.field == "labels" && len(errs.Field(err)) > 6 && errs.Field(err)[:6] == "labels") {
			t.Errorf("%+v: %v (field %q)", tc.in, err, errs.Field(err))
		}
	}
	d, err := f.store.CreateDependency(ctx, controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "node", Name: " ql3-tiny ", Version: "^1.0.0",
		Labels: map[string]string{"zone": "a"}})
	if err != nil || d.Name != "ql3-tiny" || d.Status != controlplane.DepStatusNew || d.Labels["zone"] != "a" {
		t.Fatalf("create: %+v %v", d, err)
	}
	if _, err := f.store.CreateDependency(ctx, controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "node", Name: "ql3-tiny"}); errs.Code(err) != errs.Conflict {
		t.Fatalf("duplicate: %v", err)
	}
	py, err := f.store.CreateDependency(ctx, controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "python", Name: "ql3tiny"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.store.ListDependencies(ctx, f.ProjectID, "")
	if err != nil || len(list) != 2 || list[0].Kind != "node" || list[1].ID != py.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list, err := f.store.ListDependencies(ctx, f.ProjectID, "python"); err != nil || len(list) != 1 {
		t.Fatalf("list python: %+v %v", list, err)
	}
	// A worker without the label gets nothing; a dependency without
	// labels targets every online worker.
	ws, err := f.store.DependencyWorkers(ctx, d.ID)
	if err != nil || len(ws) != 1 || ws[0].ID != f.zoned.String() {
		t.Fatalf("workers of zone=a: %+v %v", ws, err)
	}
	ws, err = f.store.DependencyWorkers(ctx, py.ID)
	if err != nil || len(ws) != 2 {
		t.Fatalf("workers of {}: %+v %v", ws, err)
	}
	// The control plane's own executor (the subscription puller, ADR 0061)
	// holds a session like a worker but installs nothing.
	executor := uuid.New()
	f.Exec(t, `INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms) VALUES ($1::uuid, 'executor', 'active', 1, 1)`, executor)
	f.Session(t, uuid.New(), executor, 1, "online", 60_000)
	f.Exec(t, `UPDATE ql3.worker_sessions SET capabilities = '{"executors":["`+placement.SubscriptionExecutor+`"]}' WHERE worker_id = $1::uuid`, executor)
	if ws, err = f.store.DependencyWorkers(ctx, py.ID); err != nil || len(ws) != 2 {
		t.Fatalf("the subscription executor is targeted: %+v %v", ws, err)
	}
	f.Exec(t, `UPDATE ql3.worker_sessions SET status = 'offline', closed_at_ms = updated_at_ms WHERE worker_id = $1::uuid`, f.WorkerID)
	if ws, err = f.store.DependencyWorkers(ctx, py.ID); err != nil || len(ws) != 1 {
		t.Fatalf("an offline worker is not targeted: %+v %v", ws, err)
	}

	set, err := f.store.GetDependencySettings(ctx, f.ProjectID, "node")
	if err != nil || set != (controlplane.DependencySettings{Kind: "node"}) {
		t.Fatalf("settings: %+v %v", set, err)
	}
	if _, err := f.store.SetDependencySettings(ctx, f.ProjectID, controlplane.DependencySettings{Kind: "node", Registry: "ftp://x"}); errs.Field(err) != "registry" {
		t.Fatalf("bad registry: %v", err)
	}
	want := controlplane.DependencySettings{Kind: "node", Registry: "http://127.0.0.1:4873/", Proxy: "http://proxy:3128"}
	if _, err := f.store.SetDependencySettings(ctx, f.ProjectID, want); err != nil {
		t.Fatal(err)
	}
	if set, err = f.store.GetDependencySettings(ctx, f.ProjectID, "node"); err != nil || set != want {
		t.Fatalf("settings: %+v %v", set, err)
	}
}

// Each action's record is written before its Run; the Run's end, by
// whatever path, records what it left — in the transaction that ends it.
func TestDependencyInstallRecordedAtTheRunsEnd(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d, err := f.store.CreateDependency(ctx, controlplane.DependencyInput{ProjectID: f.ProjectID, Kind: "node", Name: "ql3-tiny", Version: "1.0.0",
		Labels: map[string]string{"zone": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	task := f.workerTask(t, "dependency node ql3-tiny @ zoned", f.zoned)
	act := func(action, key string) string {
		t.Helper()
		if _, err := f.store.StartDependencyAction(ctx, d.ID, action); err != nil {
			t.Fatal(err)
		}
		in, err := f.store.RecordDependencyInstall(ctx, controlplane.DependencyInstallInput{DependencyID: d.ID, WorkerID: f.zoned.String(),
			TaskID: task, Action: action, RunKey: key})
		if err != nil || in.RunID != "" || in.Version != "1.0.0" || in.WorkerName != "zoned" {
			t.Fatalf("record: %+v %v", in, err)
		}
		res, err := f.ops.RunNow(ctx, controlplane.RunNowInput{TaskID: task, IdempotencyKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return res.RunID
	}
	run1 := act("install", "dep:k1")
	got, err := f.store.GetDependency(ctx, d.ID)
	if err != nil || got.Status != controlplane.DepStatusInstalling || got.LastAction != "install" {
		t.Fatalf("while running: %+v %v", got, err)
	}
	ins, err := f.store.ListDependencyInstalls(ctx, d.ID)
	if err != nil || len(ins) != 1 || ins[0].RunID != run1 || ins[0].Status != "installing" || ins[0].FinishedAtMs != 0 {
		t.Fatalf("installs while running: %+v %v", ins, err)
	}
	// Why it waits knows the pin: the other online worker does not qualify.
	why, ok, err := f.ops.WaitReason(ctx, run1)
	if err != nil || !ok || why.Eligible != 1 || why.Mismatch["worker"] != 1 {
		t.Fatalf("wait reason of a pinned Run: %+v %v %v", why, ok, err)
	}
	// A second action while one runs is a conflict.
	if _, err := f.store.StartDependencyAction(ctx, d.ID, "reinstall"); errs.Code(err) != errs.Conflict {
		t.Fatalf("second action: %v", err)
	}
	if _, err := f.store.RecordDependencyInstall(ctx, controlplane.DependencyInstallInput{DependencyID: d.ID, WorkerID: f.zoned.String(),
		TaskID: task, Action: "install", RunKey: "dep:k1b"}); errs.Code(err) != errs.Conflict {
		t.Fatalf("second record: %v", err)
	}
	// Cancelled while queued: the cancel ends the Run, the trigger the record.
	if _, err := f.ops.CancelRun(ctx, run1, "test"); err != nil {
		t.Fatal(err)
	}
	ins, _ = f.store.ListDependencyInstalls(ctx, d.ID)
	got, _ = f.store.GetDependency(ctx, d.ID)
	if len(ins) != 1 || ins[0].Status != "cancelled" || ins[0].FinishedAtMs == 0 || ins[0].RunID != run1 || got.Status != "cancelled" {
		t.Fatalf("after cancel: %+v %+v", ins, got)
	}
	// The next install succeeds (as the worker's completion would write it).
	run2 := act("install", "dep:k2")
	f.Exec(t, `UPDATE ql3.runs SET status = 'succeeded', finished_at_ms = updated_at_ms WHERE run_id = $1::uuid`, run2)
	ins, _ = f.store.ListDependencyInstalls(ctx, d.ID)
	got, _ = f.store.GetDependency(ctx, d.ID)
	if len(ins) != 1 || ins[0].Status != "installed" || ins[0].RunID != run2 || got.Status != "installed" {
		t.Fatalf("after success: %+v %+v", ins, got)
	}
	// The record outlives the Run (retention).
	for _, table := range []string{"run_events", "attempts", "runs"} {
		f.Exec(t, `DELETE FROM ql3.`+table+` WHERE run_id = $1::uuid`, run2)
	}
	if ins, _ = f.store.ListDependencyInstalls(ctx, d.ID); len(ins) != 1 || ins[0].Status != "installed" || ins[0].RunID != run2 {
		t.Fatalf("after retention: %+v", ins)
	}
	// The list route's one read gives each dependency the same installs.
	if all, err := f.store.ListProjectInstalls(ctx, f.ProjectID); err != nil || len(all) != 1 || !reflect.DeepEqual(all[d.ID], ins) {
		t.Fatalf("project installs: %+v %v, want %s: %+v", all, err, d.ID, ins)
	}
	// A remove that fails.
	run3 := act("remove", "dep:k3")
	if got, _ = f.store.GetDependency(ctx, d.ID); got.Status != "removing" {
		t.Fatalf("removing: %+v", got)
	}
	f.Exec(t, `UPDATE ql3.runs SET status = 'failed', finished_at_ms = updated_at_ms WHERE run_id = $1::uuid`, run3)
	if got, _ = f.store.GetDependency(ctx, d.ID); got.Status != "failed" {
		t.Fatalf("failed remove: %+v", got)
	}
	// An action whose Run could not be created ends failed.
	if _, err := f.store.StartDependencyAction(ctx, d.ID, "remove"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RecordDependencyInstall(ctx, controlplane.DependencyInstallInput{DependencyID: d.ID, WorkerID: f.zoned.String(),
		TaskID: task, Action: "remove", RunKey: "dep:k4"}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.FailDependencyInstall(ctx, d.ID, f.zoned.String(), "dep:k4"); err != nil {
		t.Fatal(err)
	}
	if ins, _ = f.store.ListDependencyInstalls(ctx, d.ID); ins[0].Status != "failed" || ins[0].FinishedAtMs == 0 {
		t.Fatalf("failed to start: %+v", ins)
	}
	// Other Runs never touch the records.
	if n := f.Count(t, `SELECT count(*) FROM ql3.dependency_installs WHERE finished_at_ms IS NULL`); n != 0 {
		t.Fatalf("%d pending", n)
	}
	tasks, err := f.store.DeleteDependency(ctx, d.ID)
	if err != nil || !slices.Equal(tasks, []string{task}) {
		t.Fatalf("delete: %v %v", tasks, err)
	}
	if _, err := f.store.GetDependency(ctx, d.ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("after delete: %v", err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.dependency_installs`); n != 0 {
		t.Fatalf("%d installs left", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.audit_log WHERE action LIKE 'dependency.%'`); n != 6 {
		t.Fatalf("%d audit lines, want 6 (create, 4 actions, delete)", n)
	}
}
