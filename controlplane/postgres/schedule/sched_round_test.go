package schedule_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	pgschedule "github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
)

// TestSchedulerPlansAvoidSeqScans: with every table tiny and analysed (a
// fresh install right after autovacuum's first ANALYZE), PostgreSQL plans a
// foreign-key lookup on runs as a sequential scan; under the scheduler's
// plan settings the same lookup and the whole admission statement use
// indexes only (see planSettingsSQL for why that matters).
func TestSchedulerPlansAvoidSeqScans(t *testing.T) {
	t.Parallel()
	f := newSchedFixture(t)
	_, ad := f.DueAdmission(t)
	admit(t, f, ad)
	f.Exec(t, `ANALYZE`)
	const fkLookup = `SELECT 1 FROM ONLY ql3.runs x WHERE run_id = $1 FOR KEY SHARE OF x`
	if plan := f.Explain(t, nil, fkLookup, uuid.New()); !strings.Contains(plan, "Seq Scan") {
		t.Logf("this server plans the tiny-table lookup with an index anyway:\n%s", plan)
	}
	settings := []string{pgschedule.PlanSettingsSQLForTest}
	if plan := f.Explain(t, settings, fkLookup, uuid.New()); strings.Contains(plan, "Seq Scan") {
		t.Errorf("foreign-key lookup under the scheduler's settings:\n%s", plan)
	}
	prepared := append(settings, "PREPARE admit_plan AS "+pgschedule.AdmitSQLForTest,
		"PREPARE claim_plan(text, int, bigint) AS "+pgschedule.ClaimSchedulesSQLForTest)
	for _, ex := range []string{"EXECUTE admit_plan(" + strings.Repeat("NULL, ", 21) + "NULL)", "EXECUTE claim_plan('x', 16, 30000)"} {
		if text := f.Explain(t, prepared, ex); strings.Contains(text, "Seq Scan") {
			t.Errorf("%s plans a sequential scan:\n%s", ex, text)
		}
	}
}

// TestAdmitThenClaim: the next claim rides in the admission's round trip
// and runs only after the admission committed; when the admission fails,
// the claim does not run at all.
func TestAdmitThenClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	f.DueTriggers(t, 4, "a")
	cs := f.Claim(t, "a", 2)
	batch := []controlplane.Admission{decideFor(t, cs[0]), decideFor(t, cs[1])}
	// Budget 2: the triggers are every-second ones on the database clock, so
	// under load the two just admitted can be due again by the next claim;
	// the claim's order (next fire first) still gives the two others first.
	next := controlplane.ClaimRequest{Owner: "a", Budget: 2, Lease: 30 * time.Second}

	failing := slices.Clone(batch)
	failing[1].RunID = failing[0].RunID
	if _, nc, err := pgschedule.AdmitThenClaim(ctx, f.Runtime, failing, controlplane.AdmitOptions{}, next); errs.Code(err) != errs.Conflict || nc.Claimed != nil {
		t.Fatalf("failing admission: %v, next %+v; want a conflict and no claim", err, nc)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE claim_owner IS NOT NULL`); n != 2 {
		t.Fatalf("%d claims held after a failed admission, want the batch's 2 (the next claim must not run)", n)
	}
	res, nc, err := pgschedule.AdmitThenClaim(ctx, f.Runtime, batch, controlplane.AdmitOptions{}, next)
	if err != nil || nc.Err != nil || !slices.Equal(res.Outcomes, []controlplane.Outcome{controlplane.OutcomeAdmitted, controlplane.OutcomeAdmitted}) {
		t.Fatalf("admit then claim: %+v %+v %v", res, nc, err)
	}
	if len(nc.Claimed) != 2 || nc.Claimed[0].TriggerID == cs[0].TriggerID || nc.Claimed[0].TriggerID == cs[1].TriggerID {
		t.Fatalf("next claim took %d rows (%+v), want the 2 other due triggers", len(nc.Claimed), nc.Claimed)
	}
	if got := admit(t, f, decideFor(t, nc.Claimed[0]), decideFor(t, nc.Claimed[1])); !slices.Equal(got,
		[]controlplane.Outcome{controlplane.OutcomeAdmitted, controlplane.OutcomeAdmitted}) {
		t.Fatalf("admitting the next claim: %v", got)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs`); n != 4 {
		t.Fatalf("%d runs, want 4", n)
	}
	if _, _, err := pgschedule.AdmitThenClaim(ctx, f.Runtime, batch, controlplane.AdmitOptions{}, controlplane.ClaimRequest{}); errs.Code(err) != errs.Invalid {
		t.Fatalf("invalid next claim: %v", err)
	}
}

func TestSkipOnlyAdvancesTheCursor(t *testing.T) {
	t.Parallel()
	f := newSchedFixture(t)
	tr := f.Trigger(t, "* * * * * *", schedule.MisfireSkip)
	admit(t, f, decideFor(t, f.Claim(t, "a", 1)[0]))
	f.MakeDue(t, tr.ID, 3_600_000) // an hour of downtime, far beyond the 30 s grace
	cs := f.Claim(t, "a", 1)
	ad := decideFor(t, cs[0])
	if ad.Kind != controlplane.AdmitSkip || ad.RunID != uuid.Nil {
		t.Fatalf("decision %+v, want skip without ids", ad)
	}
	if got := admit(t, f, ad); got[0] != controlplane.OutcomeSkipped {
		t.Fatalf("outcome %v", got)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE trigger_id = $1 AND last_scheduled_at_ms IS NULL
		AND next_fire_at_ms > $2 AND claim_token IS NULL`, tr.ID, cs[0].AcquiredAtMs); n != 1 {
		t.Fatal("cursor not advanced past the observation, or claim kept")
	}
}

func TestPublishNotifiesSchedulers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	listener := db.Pool(t, postgres.RoleRuntime)
	conn, err := listener.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+pgschedule.ScheduleNotifyChannel); err != nil {
		t.Fatal(err)
	}
	pub := publication.NewPublisher(db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{AllowDuplicateTriggers: true})
	p, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	task, err := pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: "n",
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "true"}}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "@hourly"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Channel != pgschedule.ScheduleNotifyChannel || n.Payload != "" {
		t.Fatalf("notification %+v", n)
	}
	// A claim of the uninitialised row must not notify (it would wake every
	// replica for nothing).
	if _, err := pgschedule.ClaimSchedules(ctx, db.Pool(t, postgres.RoleRuntime), controlplane.ClaimRequest{Owner: "a", Budget: 1, Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	sctx, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if n, err := conn.Conn().WaitForNotification(sctx); !errors.Is(err, context.DeadlineExceeded) && !pgconnTimeout(err) {
		t.Fatalf("claim notified: %+v %v", n, err)
	}
}

func pgconnTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// TestClaimPlanReadsOnlyTheDuePrefix: with thousands of schedules, the
// claim and the next-due probe read trigger_schedules_due_idx in order and
// stop at their limit: no Sort node, no sequential scan of the table.
func TestClaimPlanReadsOnlyTheDuePrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	tr := f.Trigger(t, "* * * * * *", schedule.MisfireSkip)
	f.BulkSchedules(t, tr.ID, 3000)
	for name, tc := range map[string]struct{ sql, top string }{
		"claim":    {strings.NewReplacer("$1::text", "'x'::text", "$2::int", "16", "$3::bigint", "30000").Replace(pgschedule.ClaimSchedulesSQLForTest), "LockRows"},
		"next due": {pgschedule.NextDueSQLForTest, "Limit"},
	} {
		sql := tc.sql
		tx, err := f.SU.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+sql)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		_ = tx.Rollback(ctx)
		text := strings.Join(plan, "\n")
		top, scan := strings.Index(text, tc.top), strings.Index(text, "Index Scan using trigger_schedules_due_idx")
		if top < 0 || scan < top || strings.Contains(text[top:scan], "Sort") || strings.Contains(text, "Seq Scan on trigger_schedules") ||
			name == "next due" && strings.Contains(text, "Sort") { // both of its parts read the index in order
			t.Errorf("%s plan does not read the due prefix in index order under its limit:\n%s", name, text)
		}
	}
}
