package substore_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

func newStore(t *testing.T) (pgfixture.Sched, *substore.Store) {
	t.Helper()
	f := pgfixture.NewSched(t)
	return f, substore.New(f.DB.Pool(t, postgres.RoleAdmin))
}

var def = subdef.Def{Name: "scripts", Kind: subdef.Git, URL: "https://example.org/o/scripts.git", Schedule: "0 3 * * *",
	Filter: subplan.Filter{Extensions: []string{".js"}}, AutoAdd: true, AutoRemove: true, Enabled: true}

// TestSubscriptionLifecycle: create (checked by subdef, slug derived),
// names and folders unique per project, update with a version, list,
// system task, delete; every write audited.
func TestSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	f, s := newStore(t)
	ctx := context.Background()
	sub, err := s.CreateSubscription(ctx, f.ProjectID, def)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Slug != "scripts" || sub.RemoveMode != subplan.RemoveDisable || sub.Version != 1 || sub.ProjectID != f.ProjectID ||
		len(sub.Filter.Extensions) != 1 {
		t.Fatalf("created %+v", sub)
	}
	bad := def
	bad.URL = "https://u:secret@example.org/x.git"
	if _, err := s.CreateSubscription(ctx, f.ProjectID, bad); errs.Code(err) != errs.Invalid {
		t.Fatalf("a URL with a password: %v", err)
	}
	dup := def
	dup.Slug = "other"
	if _, err := s.CreateSubscription(ctx, f.ProjectID, dup); errs.Code(err) != errs.Conflict {
		t.Fatalf("same name: %v", err)
	}
	dup = def
	dup.Name = "other"
	if _, err := s.CreateSubscription(ctx, f.ProjectID, dup); errs.Code(err) != errs.Conflict {
		t.Fatalf("same folder: %v", err)
	}
	up := sub.Def()
	up.Branch, up.AutoRemove = "main", false
	if _, err := s.UpdateSubscription(ctx, sub.ID, 7, up); errs.Code(err) != errs.Conflict {
		t.Fatalf("stale version: %v", err)
	}
	got, err := s.UpdateSubscription(ctx, sub.ID, 1, up)
	if err != nil || got.Branch != "main" || got.AutoRemove || got.Version != 2 {
		t.Fatalf("update: %+v %v", got, err)
	}
	if err := s.SetSubscriptionTask(ctx, sub.ID, f.TaskID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetSubscriptionByTask(ctx, f.TaskID); err != nil || got.ID != sub.ID {
		t.Fatalf("by task: %+v %v", got, err)
	}
	list, err := s.ListSubscriptions(ctx, f.ProjectID)
	if err != nil || len(list) != 1 || list[0].TaskID != f.TaskID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := s.DeleteSubscription(ctx, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSubscription(ctx, sub.ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("after delete: %v", err)
	}
	for action, want := range map[string]int64{controlplane.AuditSubCreate: 1, controlplane.AuditSubUpdate: 1, controlplane.AuditSubDelete: 1} {
		if n := f.Count(t, `SELECT count(*) FROM ql3.audit_log WHERE action = $1`, action); n != want {
			t.Errorf("%s: %d audit lines, want %d", action, n, want)
		}
	}
}

// TestPlanTasksSeeHandEdits: a recorded task reads as applied; a rename, a
// new revision, a second trigger or a deletion make it hand-edited.
func TestPlanTasksSeeHandEdits(t *testing.T) {
	t.Parallel()
	f, s := newStore(t)
	ctx := context.Background()
	sub, err := s.CreateSubscription(ctx, f.ProjectID, def)
	if err != nil {
		t.Fatal(err)
	}
	cmd := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "echo a"}}.WithDefaults()
	task, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "A (a.js)", Spec: cmd,
		Triggers: []controlplane.TriggerInput{{Expression: "0 1 * * *"}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := controlplane.SubscriptionTask{SubscriptionID: sub.ID, TaskID: task.ID, Path: "a.js", AppliedName: "A",
		GivenName: "A (a.js)", AppliedCron: "0 1 * * *", AppliedRevision: task.Revision, AppliedDigest: task.Digest}
	if err := s.RecordSubscriptionTask(ctx, rec); err != nil {
		t.Fatal(err)
	}
	plan := func() subplan.Task {
		t.Helper()
		ts, err := s.SubscriptionPlanTasks(ctx, sub.ID)
		if err != nil || len(ts) != 1 {
			t.Fatalf("plan tasks: %+v %v", ts, err)
		}
		return ts[0]
	}
	if got := plan(); got.Diverged() || got.CurrentName != "A" || got.CurrentCron != "0 1 * * *" || !got.Enabled {
		t.Fatalf("as applied: %+v", got)
	}
	up, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{TaskID: task.ID, ExpectedRevision: task.Revision, Name: "A (a.js)",
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "echo edited"}}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	if got := plan(); !got.Diverged() {
		t.Fatalf("another spec by hand: %+v", got)
	}
	rec.AppliedRevision, rec.AppliedDigest = up.Revision, up.Digest
	if err := s.RecordSubscriptionTask(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := plan(); got.Diverged() {
		t.Fatalf("re-recorded: %+v", got)
	}
	if _, err := f.Pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "0 2 * * *"}); err != nil {
		t.Fatal(err)
	}
	if got := plan(); !got.Diverged() {
		t.Fatalf("a second trigger by hand: %+v", got)
	}
	if _, err := s.RecordSubscriptionPull(ctx, sub.ID, "abc123", map[string]any{"added": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetSubscriptionTask(ctx, sub.ID, task.ID); err != nil {
		t.Fatal(err)
	}
	if ts, err := s.SubscriptionPlanTasks(ctx, sub.ID); err != nil || len(ts) != 0 {
		t.Fatalf("after forget: %+v %v", ts, err)
	}
	got, err := s.GetSubscription(ctx, sub.ID)
	if err != nil || got.LastCommit != "abc123" || got.LastPullAtMs == 0 {
		t.Fatalf("pull recorded: %+v %v", got, err)
	}
}
