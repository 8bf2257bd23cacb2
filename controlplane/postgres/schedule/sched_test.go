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
	pgschedule "github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/schedule"
)

func TestClaimOrderSkipLockedAndTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	var ids []string
	for range 4 {
		ids = append(ids, f.Trigger(t, "0 3 * * *", schedule.MisfireSkip).ID)
	}
	slices.Sort(ids) // same project, all uninitialised: trigger_id order

	// A row locked by another transaction (an admission in flight) is
	// passed over, not waited for.
	lockTx, err := f.SU.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTx.Exec(ctx, `SELECT 1 FROM ql3.trigger_schedules WHERE trigger_id = $1 FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}
	a := f.Claim(t, "replica-a", 2)
	if len(a) != 2 || a[0].TriggerID.String() != ids[1] || a[1].TriggerID.String() != ids[2] {
		t.Fatalf("claim A got %v, want %v", triggerIDs(a), ids[1:3])
	}
	if err := lockTx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range a {
		if c.Initialized || c.Fence.Owner != "replica-a" || c.Fence.Version != 1 || c.Fence.ExpiresAtMs != c.AcquiredAtMs+30_000 {
			t.Fatalf("claimed row %+v", c)
		}
	}
	b := f.Claim(t, "replica-b", 16)
	if got := triggerIDs(b); !slices.Equal(got, []string{ids[0], ids[3]}) {
		t.Fatalf("claim B got %v, want %v", got, []string{ids[0], ids[3]})
	}
	if c := f.Claim(t, "replica-c", 16); len(c) != 0 {
		t.Fatalf("live claims were taken again: %v", triggerIDs(c))
	}
	// Expired by database time (the expiry instant belongs to the next
	// holder): taken over with a new token and claim_version + 1.
	f.Exec(t, `UPDATE ql3.trigger_schedules SET claim_expires_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
		WHERE trigger_id = $1`, ids[1])
	c := f.Claim(t, "replica-c", 16)
	if len(c) != 1 || c[0].TriggerID.String() != ids[1] || c[0].Fence.Version != 2 || c[0].Fence.Token == a[0].Fence.Token ||
		c[0].StateVersion != a[0].StateVersion+1 {
		t.Fatalf("takeover got %+v (old %+v)", c, a[0])
	}
	// A's admission now loses the fence: raced, nothing written.
	if got := admit(t, f, decideFor(t, a[0])); got[0] != controlplane.OutcomeRaced {
		t.Fatalf("stale holder's admission = %v, want raced", got)
	}
	if got := admit(t, f, decideFor(t, c[0])); got[0] != controlplane.OutcomeInitialized {
		t.Fatalf("new holder's admission = %v, want initialized", got)
	}
}

func triggerIDs(cs []controlplane.ClaimedSchedule) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.TriggerID.String())
	}
	return out
}

func TestClaimRequestLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		req   controlplane.ClaimRequest
		field string
	}{
		{controlplane.ClaimRequest{Owner: "", Budget: 16, Lease: time.Second}, "owner"},
		{controlplane.ClaimRequest{Owner: string(make([]byte, 129)), Budget: 16, Lease: time.Second}, "owner"},
		{controlplane.ClaimRequest{Owner: "a", Budget: 0, Lease: time.Second}, "budget"},
		{controlplane.ClaimRequest{Owner: "a", Budget: 257, Lease: time.Second}, "budget"},
		{controlplane.ClaimRequest{Owner: "a", Budget: 1, Lease: 999 * time.Millisecond}, "lease"},
		{controlplane.ClaimRequest{Owner: "a", Budget: 1, Lease: 61 * time.Second}, "lease"},
	} {
		if err := tc.req.Validate(); errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field {
			t.Errorf("%+v: %v, want invalid %s", tc.req, err, tc.field)
		}
	}
	if err := (controlplane.ClaimRequest{Owner: "a", Budget: 256, Lease: 60 * time.Second}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestAdmitFireWritesOneOccurrenceAtomically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	tr := f.Trigger(t, "* * * * * *", schedule.MisfireSkip)
	cs := f.Claim(t, "replica-a", 1)
	if got := admit(t, f, decideFor(t, cs[0])); got[0] != controlplane.OutcomeInitialized {
		t.Fatalf("init = %v", got)
	}
	due := f.MakeDue(t, tr.ID, 2000)
	cs = f.Claim(t, "replica-a", 1)
	ad := decideFor(t, cs[0])
	if ad.Kind != controlplane.AdmitFire || ad.ScheduledForMs != due {
		t.Fatalf("decision %+v, want fire at %d", ad, due)
	}
	if got := admit(t, f, ad); got[0] != controlplane.OutcomeAdmitted {
		t.Fatalf("admit = %v", got)
	}
	var (
		status, origin, key                string
		maxAttempts, attemptCount          int
		base, maxBackoff, timeout, created int64
		onLost                             bool
	)
	if err := f.SU.QueryRow(ctx, `SELECT status, origin, idempotency_key, retry_max_attempts, attempt_count,
		retry_backoff_base_ms, retry_backoff_max_ms, timeout_ms, retry_on_lost, created_at_ms
		FROM ql3.runs WHERE run_id = $1 AND scheduled_for_ms = $2 AND queued_at_ms = created_at_ms`, ad.RunID, due).
		Scan(&status, &origin, &key, &maxAttempts, &attemptCount, &base, &maxBackoff, &timeout, &onLost, &created); err != nil {
		t.Fatal(err)
	}
	if status != "queued" || origin != "cron" || key != schedule.IdempotencyKey(tr.ID, tr.Revision, due) ||
		maxAttempts != 3 || attemptCount != 1 || base != 1000 || maxBackoff != 8000 || !onLost || timeout != 86_400_000 {
		t.Fatalf("run = %s %s %s %d %d %d %d %d %v", status, origin, key, maxAttempts, attemptCount, base, maxBackoff, timeout, onLost)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND attempt_id = $2 AND attempt = 1
		AND status = 'claimed' AND executor = 'remote_worker' AND worker_id IS NULL AND offer_id IS NULL`, ad.RunID, ad.AttemptID); n != 1 {
		t.Fatalf("%d pristine attempts", n)
	}
	rows, err := f.SU.Query(ctx, `SELECT sequence, type, coalesce(attempt, 0), payload::text FROM ql3.run_events WHERE run_id = $1 ORDER BY sequence`, ad.RunID)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		seq     int64
		typ     string
		attempt int
		payload string
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ev, error) {
		var e ev
		return e, r.Scan(&e.seq, &e.typ, &e.attempt, &e.payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].typ != string(run.EventCreated) || evs[1].typ != string(run.EventQueued) || evs[1].attempt != 1 {
		t.Fatalf("events %+v", evs)
	}
	for _, e := range evs {
		if _, err := run.DecodePayload([]byte(e.payload)); err != nil {
			t.Fatalf("event %d payload %s: %v", e.seq, e.payload, err)
		}
	}
	var last, next int64
	var claimed bool
	if err := f.SU.QueryRow(ctx, `SELECT last_scheduled_at_ms, next_fire_at_ms, claim_token IS NOT NULL FROM ql3.trigger_schedules
		WHERE trigger_id = $1`, tr.ID).Scan(&last, &next, &claimed); err != nil {
		t.Fatal(err)
	}
	if last != due || next != ad.NextFireAtMs || next <= cs[0].AcquiredAtMs || claimed {
		t.Fatalf("schedule last=%d next=%d claimed=%v; want last %d next %d", last, next, claimed, due, ad.NextFireAtMs)
	}
}

func TestAdmitRefusesWithoutWriting(t *testing.T) {
	t.Parallel()
	f := newSchedFixture(t)
	cases := []struct {
		name   string
		tamper func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission)
		want   controlplane.Outcome
	}{
		{"token", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.Claim.Fence.Token = uuid.New()
		}, controlplane.OutcomeRaced},
		{"owner", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.Claim.Fence.Owner = "replica-x"
		}, controlplane.OutcomeRaced},
		{"claim version", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.Claim.Fence.Version--
		}, controlplane.OutcomeRaced},
		{"expired by database time", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			f.Exec(t, `UPDATE ql3.trigger_schedules SET claim_expires_at_ms = $2 WHERE trigger_id = $1`, c.TriggerID, c.AcquiredAtMs)
			ad.Claim.Fence.ExpiresAtMs = c.AcquiredAtMs
		}, controlplane.OutcomeRaced},
		{"observation", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.Claim.ObservedAtMs--
		}, controlplane.OutcomeRaced},
		{"cursor", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.Claim.NextFireAtMs -= 1000
		}, controlplane.OutcomeStale},
		{"task disabled", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			f.Exec(t, `UPDATE ql3.tasks SET enabled = false WHERE task_id = $1`, c.TaskID)
			t.Cleanup(func() { f.Exec(t, `UPDATE ql3.tasks SET enabled = true WHERE task_id = $1`, c.TaskID) })
		}, controlplane.OutcomeStale},
		{"digest pin", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.Claim.ExecutionDigest[0] ^= 1
		}, controlplane.OutcomeStale},
		{"decision not at the cursor", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.ScheduledForMs += 1000
		}, controlplane.OutcomeCorrupt},
		{"cursor moved backwards", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			ad.NextFireAtMs = c.AcquiredAtMs
		}, controlplane.OutcomeCorrupt},
		{"execution revision not digest-valid", func(t *testing.T, c controlplane.ClaimedSchedule, ad *controlplane.Admission) {
			f.Exec(t, `UPDATE ql3.execution_revisions SET canonical_spec = replace(canonical_spec, 'tick', 'tock') WHERE execution_revision_id = $1`, c.ExecutionRevisionID)
			t.Cleanup(func() {
				f.Exec(t, `UPDATE ql3.execution_revisions SET canonical_spec = replace(canonical_spec, 'tock', 'tick') WHERE execution_revision_id = $1`, c.ExecutionRevisionID)
			})
		}, controlplane.OutcomeCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := f.Trigger(t, "* * * * * *", schedule.MisfireFireOnce)
			cs := f.Claim(t, "replica-a", 1)
			admit(t, f, decideFor(t, cs[0]))
			f.MakeDue(t, tr.ID, 2000)
			cs = f.Claim(t, "replica-a", 1)
			ad := decideFor(t, cs[0])
			tc.tamper(t, cs[0], &ad)
			if got := admit(t, f, ad); got[0] != tc.want {
				t.Fatalf("outcome %v, want %v", got[0], tc.want)
			}
			if n := f.Count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, tr.ID); n != 0 {
				t.Fatalf("%d runs written", n)
			}
			if n := f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE trigger_id = $1 AND last_scheduled_at_ms IS NULL
				AND next_fire_at_ms = $2`, tr.ID, cs[0].NextFireAtMs); n != 1 {
				t.Fatal("schedule advanced")
			}
			// Leave no claim behind for the next case's budget-1 claim.
			f.Exec(t, `UPDATE ql3.trigger_schedules SET next_fire_at_ms = 4102444800000, claim_owner = NULL, claim_token = NULL,
				claim_expires_at_ms = NULL WHERE trigger_id = $1`, tr.ID)
		})
	}
}

func TestAdmitBatchIsolatesRefusedRowsAndRollsBackOnFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	f.DueTriggers(t, 3, "replica-a")
	cs := f.Claim(t, "replica-a", 16)
	batch := []controlplane.Admission{decideFor(t, cs[0]), decideFor(t, cs[1]), decideFor(t, cs[2])}
	batch[1].Claim.Fence.Token = uuid.New() // lost fence on the middle row

	// A write failure anywhere rolls the whole batch back: the third row
	// reuses the first row's run id.
	failing := slices.Clone(batch)
	failing[2].RunID = failing[0].RunID
	if _, err := pgschedule.Admit(ctx, f.Runtime, failing, controlplane.AdmitOptions{}); errs.Code(err) != errs.Conflict {
		t.Fatalf("batch with a duplicate run id: %v, want conflict", err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs after a failed batch", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE claim_owner = 'replica-a'`); n != 3 {
		t.Fatalf("%d claims left after a failed batch, want 3", n)
	}
	got := admit(t, f, batch...)
	if !slices.Equal(got, []controlplane.Outcome{"admitted", "raced", "admitted"}) {
		t.Fatalf("batch outcomes %v", got)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs`); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.run_events`); n != 4 {
		t.Fatalf("%d events, want 4", n)
	}
}

// TestAdmissionAssertsItsWriteCounts: COMMIT travels in the same pipeline
// as the admission statement, so the statement itself must refuse to commit
// writes that do not add up. A trigger that silently swallows event inserts
// (standing in for any bug or tampering that loses a write) makes the
// statement fail: nothing is written, the claim is still held, and the same
// admission succeeds once the writes add up again.
func TestAdmissionAssertsItsWriteCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	_, ad := f.DueAdmission(t)
	f.Exec(t, `CREATE FUNCTION public.swallow_row() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$`)
	f.Exec(t, `CREATE TRIGGER swallow BEFORE INSERT ON ql3.run_events FOR EACH ROW EXECUTE FUNCTION public.swallow_row()`)
	_, err := pgschedule.Admit(ctx, f.Runtime, []controlplane.Admission{ad}, controlplane.AdmitOptions{})
	if err == nil || errors.Is(err, controlplane.ErrCommitUnknown) || !strings.Contains(err.Error(), "0 events for 1 admitted") {
		t.Fatalf("admission with swallowed events: %v, want a refusal naming the counts", err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs committed by a refused admission", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE claim_owner = 'a'`); n != 1 {
		t.Fatalf("the refused admission released its claim (%d held)", n)
	}
	f.Exec(t, `DROP TRIGGER swallow ON ql3.run_events`)
	if got := admit(t, f, ad); !slices.Equal(got, []controlplane.Outcome{controlplane.OutcomeAdmitted}) {
		t.Fatalf("admission after the fault: %v", got)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.run_events`); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}

// TestAdmissionIsBoundToTheClaimedRowVersion: admission finds the schedule
// row by the ctid the claim returned, so any later version of the row — here
// one that changes no fence column at all — makes it raced, and nothing is
// written. Its plan reads trigger_schedules by TID only (no index leaf page
// for SSI to lock; see ClaimedSchedule.TupleID).
func TestAdmissionIsBoundToTheClaimedRowVersion(t *testing.T) {
	t.Parallel()
	f := newSchedFixture(t)
	tr, ad := f.DueAdmission(t)
	f.Exec(t, `UPDATE ql3.trigger_schedules SET updated_at_ms = updated_at_ms WHERE trigger_id = $1`, tr.ID)
	if got := admit(t, f, ad); !slices.Equal(got, []controlplane.Outcome{controlplane.OutcomeRaced}) {
		t.Fatalf("admission of a superseded row version: %v, want raced", got)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs written by a raced admission", n)
	}
	text := f.Explain(t, []string{pgschedule.PlanSettingsSQLForTest, "PREPARE admit_plan AS " + pgschedule.AdmitSQLForTest},
		"EXECUTE admit_plan("+strings.Repeat("NULL, ", 21)+"NULL)")
	if strings.Count(text, "Tid Scan on trigger_schedules") != 2 || strings.Contains(text, "Scan using trigger_schedules") ||
		strings.Contains(text, "Seq Scan on trigger_schedules") {
		t.Errorf("admission does not reach trigger_schedules by TID only (once to check, once to update):\n%s", text)
	}
}
