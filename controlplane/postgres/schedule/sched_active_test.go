package schedule_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	pgschedule "github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/schedule"
)

// TestInactiveSchedulesLeaveTheDueIndex: publication marks the schedule of a
// disabled trigger, a disabled task's triggers and an archived project's
// triggers inactive (migration 0004), so they are no longer in the claim's
// due prefix at all — even with a NULL (uninitialised) or past cursor —
// and marks them active again when they are re-enabled.
func TestInactiveSchedulesLeaveTheDueIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	enabled := f.Trigger(t, "* * * * * *", schedule.MisfireSkip)
	off := false
	disabledRec, err := f.Pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: f.TaskID, Expression: "* * * * * *",
		TimeZone: "UTC", Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	disabled := schedTrigger{ID: disabledRec.ID, Revision: disabledRec.Revision}

	active := func(id string) bool {
		t.Helper()
		var a bool
		if err := f.SU.QueryRow(ctx, `SELECT active FROM ql3.trigger_schedules WHERE trigger_id = $1`, id).Scan(&a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// inDueIndex counts the rows the partial due index holds.
	inDueIndex := func() int64 {
		t.Helper()
		return f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules s WHERE s.active
			AND coalesce(s.next_fire_at_ms, -9223372036854775808) <= 9223372036854775807`)
	}
	check := func(step string, wantEnabled, wantDisabled bool, wantInIndex int64) {
		t.Helper()
		if got := active(enabled.ID); got != wantEnabled {
			t.Errorf("%s: enabled trigger active = %v, want %v", step, got, wantEnabled)
		}
		if got := active(disabled.ID); got != wantDisabled {
			t.Errorf("%s: disabled trigger active = %v, want %v", step, got, wantDisabled)
		}
		if got := inDueIndex(); got != wantInIndex {
			t.Errorf("%s: rows in the due index = %d, want %d", step, got, wantInIndex)
		}
	}

	var def string
	if err := f.SU.QueryRow(ctx, `SELECT pg_get_indexdef('ql3.trigger_schedules_due_idx'::regclass)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(def, "WHERE active") {
		t.Fatalf("trigger_schedules_due_idx is not partial on active: %s", def)
	}
	check("published", true, false, 1)
	// A past cursor on the disabled row (the case the ADR records) still
	// keeps it out of the claim; the enabled row is claimed alone.
	f.MakeDue(t, disabled.ID, 5000)
	if got := triggerIDs(f.Claim(t, "a", 16)); len(got) != 1 || got[0] != enabled.ID {
		t.Fatalf("claim took %v, want only %s", got, enabled.ID)
	}

	// Re-enabling the trigger (a new revision) makes its schedule active.
	on := true
	if _, err := f.Pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: disabled.ID, ExpectedRevision: disabled.Revision,
		Expression: "* * * * * *", TimeZone: "UTC", Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	check("trigger re-enabled", true, true, 2)

	// Disabling the task marks all its schedules inactive; enabling it back
	// restores them.
	if _, err := f.Pub.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: f.TaskID, Enabled: false}); err != nil {
		t.Fatal(err)
	}
	check("task disabled", false, false, 0)
	if got := f.Claim(t, "b", 16); len(got) != 0 {
		t.Fatalf("claim of a disabled task's schedules took %v", triggerIDs(got))
	}
	if _, ok, err := pgschedule.NextDue(ctx, f.Runtime); err != nil || ok {
		t.Fatalf("NextDue with only inactive schedules = ok %v, err %v; want nothing due", ok, err)
	}
	if _, err := f.Pub.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: f.TaskID, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	check("task re-enabled", true, true, 2)
	if got := f.Claim(t, "c", 16); len(got) != 2 {
		t.Fatalf("claim after re-enabling took %v, want both schedules", triggerIDs(got))
	}

	// Archiving the project marks every schedule inactive for good.
	if _, err := f.Pub.ArchiveProject(ctx, controlplane.ArchiveProjectInput{ProjectID: f.ProjectID}); err != nil {
		t.Fatal(err)
	}
	check("project archived", false, false, 0)
	if n := f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE claim_token IS NOT NULL`); n != 0 {
		t.Errorf("archive left %d claims", n)
	}
}
