package schedule_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane"
	pgschedule "github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/schedule"
)

// expireClaim moves a claimed row's times back by ms (the claim's
// observation, its expiry and the cursor together): what the row looks like
// ms later, without waiting.
func expireClaim(f schedFixture, t *testing.T, triggerID string, ms int64) {
	t.Helper()
	f.Exec(t, `UPDATE ql3.trigger_schedules SET next_fire_at_ms = next_fire_at_ms - $2,
		updated_at_ms = updated_at_ms - $2, claim_expires_at_ms = claim_expires_at_ms - $2
		WHERE trigger_id = $1 AND claim_token IS NOT NULL`, triggerID, ms)
}

// TestTakeoverKeepsTheFirstObservation: a claim that takes over an expired
// claim leaves updated_at_ms (the observation) where the first claim of the
// cursor put it, along a chain of dead claims, and returns the real
// claim-acquired time beside it; the decision on it fires the occurrence
// although it is far later than the grace by now, and the next fresh claim
// is an ordinary one again.
func TestTakeoverKeepsTheFirstObservation(t *testing.T) {
	f := newSchedFixture(t)
	tr, _ := f.DueAdmission(t) // claimed by "a", never admitted: a died
	first := f.Count(t, `SELECT updated_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, tr.ID)
	cursor := f.Count(t, `SELECT next_fire_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, tr.ID)

	expireClaim(f, t, tr.ID, 31_000)
	b := f.Claim(t, "b", 1)
	if len(b) != 1 || !b[0].TakenOver() || b[0].ObservedAtMs != first-31_000 || b[0].AcquiredAtMs < b[0].ObservedAtMs+31_000 {
		t.Fatalf("takeover by b: %+v (first observation %d)", b, first)
	}
	expireClaim(f, t, tr.ID, 31_000) // b died too
	c := f.Claim(t, "c", 1)
	if len(c) != 1 || !c[0].TakenOver() || c[0].ObservedAtMs != first-62_000 || c[0].NextFireAtMs != cursor-62_000 {
		t.Fatalf("takeover by c: %+v", c)
	}
	if st := c[0].State(); st.SeenDueAtMs != c[0].ObservedAtMs {
		t.Fatalf("state %+v does not carry the dead claims' observation", st)
	}
	ad := decideFor(t, c[0])
	if ad.Kind != controlplane.AdmitFire || ad.ScheduledForMs != c[0].NextFireAtMs || ad.NextFireAtMs <= c[0].AcquiredAtMs {
		t.Fatalf("decision on the takeover %+v: want fire of the cursor, next past now", ad)
	}
	if ad.IdempotencyKey != schedule.IdempotencyKey(tr.ID, tr.Revision, c[0].NextFireAtMs) {
		t.Fatalf("key %q", ad.IdempotencyKey)
	}
	if got := admit(t, f, ad); got[0] != controlplane.OutcomeAdmitted {
		t.Fatalf("admission %v", got)
	}
	if n := f.Count(t, `SELECT updated_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, tr.ID); n < c[0].AcquiredAtMs {
		t.Fatalf("admission left updated_at_ms at %d, before the takeover at %d", n, c[0].AcquiredAtMs)
	}
	f.MakeDue(t, tr.ID, 1000)
	d := f.Claim(t, "d", 1)
	if len(d) != 1 || d[0].TakenOver() || d[0].ObservedAtMs != d[0].AcquiredAtMs || d[0].State().SeenDueAtMs != 0 {
		t.Fatalf("fresh claim after the admission: %+v", d)
	}
}

// TestNextDueWakesAtClaimExpiry: rows under a live claim are not claimable,
// but NextDue reports their expiry, so a loop wakes when a dead replica's
// claims can be taken over instead of up to a cadence later.
func TestNextDueWakesAtClaimExpiry(t *testing.T) {
	ctx := context.Background()
	f := newSchedFixture(t)
	tr, _ := f.DueAdmission(t) // claimed with a 30 s lease
	expires := f.Count(t, `SELECT claim_expires_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, tr.ID)
	before := f.Count(t, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
	delay, ok, err := pgschedule.NextDue(ctx, f.Runtime)
	after := f.Count(t, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
	if err != nil || !ok {
		t.Fatalf("NextDue with only a claimed row: %v %v, want its expiry", ok, err)
	}
	if ms := delay.Milliseconds(); ms > expires-before || ms < expires-after {
		t.Fatalf("NextDue %v, want the claim's expiry in %d..%d ms", delay, expires-after, expires-before)
	}
	expireClaim(f, t, tr.ID, 31_000)
	if delay, ok, err := pgschedule.NextDue(ctx, f.Runtime); err != nil || !ok || delay > 0 {
		t.Fatalf("NextDue with an expired claim: %v %v %v, want due now", delay, ok, err)
	}
}
