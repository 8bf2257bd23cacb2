package coordinator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, ""},
		{Config{Budget: 256, Lease: 60 * time.Second, Cadence: time.Minute, StopTimeout: 10 * time.Second, MaxAttempts: 16}, ""},
		{Config{Budget: 257}, "budget"},
		{Config{Budget: -1}, "budget"},
		{Config{Lease: 500 * time.Millisecond}, "lease"},
		{Config{Lease: 61 * time.Second}, "lease"},
		{Config{Lease: 1500*time.Millisecond + time.Microsecond}, "lease"},
		{Config{Owner: strings.Repeat("x", 129)}, "owner"},
		{Config{Cadence: time.Millisecond}, "cadence"},
		{Config{StopTimeout: 11 * time.Second}, "stopTimeout"},
		{Config{Admission: "sometimes"}, "admission"},
		{Config{MaxAttempts: 17}, "maxAttempts"},
		{Config{Page: 257}, "page"},
		{Config{Budget: 32, Page: 16}, "page"},
		{Config{Budget: 8, Page: 8}, ""},
		{Config{Budget: 128}, ""}, // the page follows a budget above its default
	} {
		err := tc.cfg.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.cfg, err)
			}
			continue
		}
		if errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field {
			t.Errorf("%+v: %v, want invalid %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := New(nil, Config{}); errs.Field(err) != "db" {
		t.Errorf("New(nil): %v", err)
	}
}

// TestNewRevisionWhileClaimHeld: a trigger revision published between claim
// and admission invalidates the claim (raced, nothing written); the new
// revision initialises after its activation and never fires retroactively.
func TestNewRevisionWhileClaimHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	tr := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireFireOnce)
	c, diags := newCoord(t, e.pool(t, "coord-rev"), Config{Owner: "replica-r"})
	initialiseAndWaitDue(t, e, c, 1)
	var log claimLog
	c.testHookAfterClaim = log.hook(func([]controlplane.ClaimedSchedule) {
		if _, err := e.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: tr.ID, ExpectedRevision: tr.Revision,
			Expression: "* * * * * *", TimeZone: "UTC", Misfire: schedule.MisfireFireOnce}); err != nil {
			t.Error(err)
		}
	})
	res, err := c.Round(ctx)
	if err != nil || res.Claimed != 1 || res.Raced != 1 || res.Admitted != 0 {
		t.Fatalf("round across a publish: %+v %v", res, err)
	}
	diags.mu.Lock()
	for _, d := range diags.all {
		if !d.Debug || d.Kind != "admission_refused_raced" || d.TriggerID != tr.ID {
			t.Errorf("a lost fence is counted and logged at debug only: diagnostic %+v", d)
		}
	}
	diags.mu.Unlock()
	c.testHookAfterClaim = log.hook(nil)
	old := log.claims[0]
	if n := e.count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs from the invalidated claim", n)
	}
	res, err = c.Round(ctx)
	if err != nil || res.Initialized != 1 || res.Admitted != 0 {
		t.Fatalf("first round of the new revision: %+v %v", res, err)
	}
	var activated, next int64
	if err := e.su.QueryRow(ctx, `SELECT r.activated_at_ms, s.next_fire_at_ms FROM ql3.trigger_schedules s
		JOIN ql3.trigger_revisions r ON r.trigger_id = s.trigger_id AND r.revision = s.trigger_revision
		WHERE s.trigger_id = $1 AND s.trigger_revision = 2`, tr.ID).Scan(&activated, &next); err != nil {
		t.Fatal(err)
	}
	init, _ := log.firstClaimOf(tr.ID, old.Fence.Version)
	if next <= init.AcquiredAtMs || next <= activated || next <= old.NextFireAtMs {
		t.Fatalf("new revision cursor %d, observed at %d, activated %d, old cursor %d: fired retroactively", next, init.AcquiredAtMs, activated, old.NextFireAtMs)
	}
	roundUntil(t, c, 30*time.Second, func() bool { return c.Metrics().Admitted.Load() >= 2 })
	if n := e.count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_revision <> 2 OR scheduled_for_ms < $1`, next); n != 0 {
		t.Fatalf("%d runs of the old revision or before the new cursor", n)
	}
	assertExactlyOnce(t, e.su)
}

// TestMisfireAcrossDowntime: a cursor an hour in the past (the cluster was
// down) is skipped under "skip" and fired exactly once, at the cursor,
// under "fire_once"; either way the cursor moves past now, no backlog.
func TestMisfireAcrossDowntime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	skip := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	once := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireFireOnce)
	c, _ := newCoord(t, e.pool(t, "coord-misfire"), Config{Owner: "replica-m"})
	roundUntil(t, c, 30*time.Second, func() bool { return c.Metrics().Initialized.Load() == 2 })
	var downAt int64
	if err := e.su.QueryRow(ctx, `UPDATE ql3.trigger_schedules
		SET next_fire_at_ms = ((extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3600000) / 1000 * 1000
		RETURNING next_fire_at_ms`).Scan(&downAt); err != nil {
		t.Fatal(err)
	}
	res, err := c.Round(ctx)
	if err != nil || res.Claimed != 2 || res.Skipped != 1 || res.Admitted != 1 {
		t.Fatalf("round after downtime: %+v %v", res, err)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, skip.ID); n != 0 {
		t.Fatalf("skip policy admitted %d runs", n)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms = $2`, once.ID, downAt); n != 1 {
		t.Fatalf("fire_once admitted %d runs at the oldest missed occurrence", n)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs`); n != 1 {
		t.Fatalf("%d runs: a backlog was replayed", n)
	}
	now := e.dbNowMs(t)
	if n := e.count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE next_fire_at_ms <= $1::bigint - 5000`, now); n != 0 {
		t.Fatalf("%d cursors still in the past", n)
	}
	if m := c.Metrics(); m.Missed.Load() < 2*3500 {
		t.Fatalf("missed = %d, want about 2×3600", m.Missed.Load())
	}
	assertExactlyOnce(t, e.su)
}

// TestDSTThroughTheDatabase: a New York trigger's cursor, initialised by the
// real claim → decide → admit path from a revision activated just before a
// transition, follows the DST policy (ADR 0001): the 02:30 of spring-forward
// day fires once at 03:00 EDT; the repeated 01:30 of fall-back day fires only
// the first time.
func TestDSTThroughTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	utc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	e := newEnv(t)
	cases := []struct {
		expr, activated, want string
	}{
		{"30 2 * * *", "2027-03-14T06:59:00Z", "2027-03-14T07:00:00Z"},   // 01:59 EST → the gap's 02:30 fires at 03:00 EDT
		{"30 1 * * *", "2027-11-07T04:00:00Z", "2027-11-07T05:30:00Z"},   // 00:00 EDT → 01:30 EDT
		{"30 1 * * *", "2027-11-07T05:31:00Z", "2027-11-08T06:30:00Z"},   // after 01:30 EDT: not the repeated 01:30 EST
		{"*/30 * * * *", "2027-11-07T05:31:00Z", "2027-11-07T06:00:00Z"}, // cadence mode: 01:00 EST, the repeated hour runs
	}
	var ids []string
	for _, tc := range cases {
		tr := e.trigger(t, tc.expr, "America/New_York", schedule.MisfireSkip)
		e.exec(t, `UPDATE ql3.trigger_revisions SET activated_at_ms = $2 WHERE trigger_id = $1`, tr.ID, utc(tc.activated))
		ids = append(ids, tr.ID)
	}
	c, _ := newCoord(t, e.pool(t, "coord-dst"), Config{Owner: "replica-dst"})
	res, err := c.Round(ctx)
	if err != nil || res.Initialized != len(cases) {
		t.Fatalf("round: %+v %v", res, err)
	}
	for i, tc := range cases {
		got := e.count(t, `SELECT next_fire_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, ids[i])
		if got != utc(tc.want) {
			t.Errorf("%s activated %s: cursor %s, want %s", tc.expr, tc.activated, time.UnixMilli(got).UTC().Format(time.RFC3339), tc.want)
		}
	}
	assertExactlyOnce(t, e.su)
}

// TestRecoveryLeavesPristineRunsAlone: startup recovery (a lifecycle
// sweep) leaves the pristine queued Runs admission wrote untouched, and
// resolves a dispatching Run whose unstarted lease expired (back to queued,
// same Attempt).
func TestRecoveryLeavesPristineRunsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.triggers(t, 3, "* * * * * *")
	c, _ := newCoord(t, e.pool(t, "coord-rec"), Config{Owner: "replica-rec"})
	roundUntil(t, c, 30*time.Second, func() bool { return c.Metrics().Admitted.Load() >= 3 })
	versions := e.count(t, `SELECT sum(r.version + a.version) FROM ql3.runs r JOIN ql3.attempts a USING (run_id)`)
	rep, err := c.Recover(ctx)
	if err != nil || rep.Sweep.Changed() != 0 || rep.Passes != 1 {
		t.Fatalf("recovery %+v %v", rep, err)
	}
	if v := e.count(t, `SELECT sum(r.version + a.version) FROM ql3.runs r JOIN ql3.attempts a USING (run_id)`); v != versions {
		t.Fatalf("recovery touched pristine Runs: versions %d → %d", versions, v)
	}
	// A Run that drifted to dispatching without any lease (its lease was
	// released) is resolved: back to queued with the same Attempt.
	var drifted string
	if err := e.su.QueryRow(ctx, `UPDATE ql3.runs SET status = 'dispatching', version = version + 1
		WHERE run_id = (SELECT min(run_id::text)::uuid FROM ql3.runs) RETURNING run_id::text`).Scan(&drifted); err != nil {
		t.Fatal(err)
	}
	rep, err = c.Recover(ctx)
	if err != nil || rep.Sweep.Requeued != 1 {
		t.Fatalf("recovery %+v %v", rep, err)
	}
	if s := e.count(t, `SELECT count(*) FROM ql3.runs WHERE status = 'queued' AND run_id = $1`, drifted); s != 1 {
		t.Fatalf("drifted run not requeued")
	}
}

// TestPerOccurrenceAdmissionMode admits the same way one transaction per
// occurrence.
func TestPerOccurrenceAdmissionMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.triggers(t, 20, "* * * * * *")
	c, _ := newCoord(t, e.pool(t, "coord-single"), Config{Owner: "replica-single", Admission: AdmitPerOccurrence})
	roundUntil(t, c, 30*time.Second, func() bool { return c.Metrics().Admitted.Load() >= 40 })
	if got := assertExactlyOnce(t, e.su); got != c.Metrics().Admitted.Load() {
		t.Fatalf("%d runs, %d admitted", got, c.Metrics().Admitted.Load())
	}
}

// TestPoisonedOccurrenceDoesNotBlockTheBatch: a batch that fails as a whole
// (here: one occurrence's idempotency key already taken by a manual row) is
// re-admitted one occurrence per transaction, so the others commit.
func TestPoisonedOccurrenceDoesNotBlockTheBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	trs := e.triggers(t, 4, "* * * * * *")
	c, diags := newCoord(t, e.pool(t, "coord-poison"), Config{Owner: "replica-poison", Lease: time.Second})
	initialiseAndWaitDue(t, e, c, int64(len(trs)))
	var due int64
	if err := e.su.QueryRow(ctx, `SELECT next_fire_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, trs[0].ID).Scan(&due); err != nil {
		t.Fatal(err)
	}
	// A foreign Run already holds trigger 0's idempotency key for this
	// occurrence (inserted behind the scheduler's back).
	e.exec(t, `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, idempotency_key, scheduled_for_ms, status, retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms,
		retry_on_lost, timeout_ms, not_before_ms, created_at_ms, updated_at_ms, finished_at_ms)
		SELECT gen_random_uuid(), r.project_id, r.task_id, r.task_revision, r.execution_revision_id, r.execution_digest,
		'manual', $2, $3, 'cancelled', 1, 0, 0, false, 1000, 0, 0, 0, 0
		FROM ql3.trigger_revisions r WHERE r.trigger_id = $1`, trs[0].ID, schedule.IdempotencyKey(trs[0].ID, trs[0].Revision, due), due)
	res, err := c.Round(ctx)
	if err != nil || res.Claimed != 4 || res.Admitted != 3 || res.Unresolved != 1 {
		t.Fatalf("round with a poisoned occurrence: %+v %v", res, err)
	}
	if c.Metrics().BatchFallbacks.Load() != 1 || diags.kinds()["admit_failed"] != 1 {
		t.Fatalf("metrics %s fallbacks %d diagnostics %v", metricsString(c.Metrics()), c.Metrics().BatchFallbacks.Load(), diags.kinds())
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs WHERE origin = 'cron'`); n != 3 {
		t.Fatalf("%d cron runs, want 3", n)
	}
}
