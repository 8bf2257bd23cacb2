package coordinator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/schedule"
)

// Issue 16 / ADR 0002 rule 5: a replica that claimed a due occurrence and
// then died or stalled past its lease must not turn it into a misfire. These
// tests use the defaults a production cluster runs with: claim lease 30 s,
// misfire grace 30 s (the publisher's default), cadence 1 s.

// shiftClaimedRow moves every time on a schedule row back by ms of database
// time, which is what the row looks like after ms passed: the cursor, the
// claim's observation and its expiry all move together, so a claim taken
// 31 s "ago" with a 30 s lease has expired 1 s ago. Only the test's data is
// edited; the code under test runs unchanged against real PostgreSQL time.
func shiftClaimedRow(t *testing.T, e env, triggerID string, ms int64) {
	t.Helper()
	e.exec(t, `UPDATE ql3.trigger_schedules SET next_fire_at_ms = next_fire_at_ms - $2,
		updated_at_ms = updated_at_ms - $2, claim_expires_at_ms = claim_expires_at_ms - $2
		WHERE trigger_id = $1 AND claim_token IS NOT NULL AND last_scheduled_at_ms IS NULL`, triggerID, ms)
}

// TestTakeoverAfterDefaultLeaseIsNotAMisfire: replica A claims a due
// occurrence and dies (its pool closes) or stalls (it is held in the middle
// of its round) before admitting. 31 s of database time later (the claim is
// shifted back, see shiftClaimedRow) replica B takes it over. Under skip
// and under fire_once B admits exactly one Run for the claimed occurrence,
// with the occurrence's idempotency key, and replays none of the
// occurrences between it and the takeover; a stalled A that resumes is
// refused (raced). On the code before ADR 0002 rule 5 the skip cases
// skipped the occurrence (31 s late against a 30 s grace): no Run.
func TestTakeoverAfterDefaultLeaseIsNotAMisfire(t *testing.T) {
	t.Parallel()
	for _, policy := range []schedule.MisfirePolicy{schedule.MisfireSkip, schedule.MisfireFireOnce} {
		for _, stall := range []bool{false, true} {
			name := string(policy) + "/died"
			if stall {
				name = string(policy) + "/stalled"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testTakeover(t, policy, stall)
			})
		}
	}
}

func testTakeover(t *testing.T, policy schedule.MisfirePolicy, stall bool) {
	ctx := context.Background()
	e := newEnv(t)
	tr := e.trigger(t, "* * * * * *", "UTC", policy)
	poolA := e.pool(t, "coord-a")
	a, aDiags := newCoord(t, poolA, Config{Owner: "replica-a"})
	if a.cfg.Lease != controlplane.DefaultClaimLease || controlplane.DefaultClaimLease != 30*time.Second {
		t.Fatalf("lease %v: this test is about the default 30 s lease", a.cfg.Lease)
	}
	if g := e.count(t, `SELECT misfire_grace_ms FROM ql3.trigger_revisions WHERE trigger_id = $1`, tr.ID); g != 30_000 {
		t.Fatalf("grace %d: this test is about the default 30 s grace", g)
	}
	initialiseAndWaitDue(t, e, a, 1)

	var aLog claimLog
	paused, resume := make(chan struct{}), make(chan struct{})
	a.testHookAfterClaim = aLog.hook(func([]controlplane.ClaimedSchedule) {
		if !stall {
			poolA.Close() // killed between claim and admission
			return
		}
		close(paused) // stalled (GC pause, SIGSTOP, network): hold the round
		<-resume
	})
	aDone := make(chan RoundResult, 1)
	go func() {
		res, _ := a.Round(ctx)
		aDone <- res
	}()
	if stall {
		<-paused
	} else if res := <-aDone; res.Claimed != 1 || res.Unresolved != 1 {
		t.Fatalf("killed round: %+v", res)
	}
	dead := aLog.claims[0]
	if dead.TakenOver() || dead.ObservedAtMs != dead.AcquiredAtMs || dead.Fence.ExpiresAtMs != dead.AcquiredAtMs+30_000 {
		t.Fatalf("fresh claim %+v", dead)
	}
	const passed = 31_000 // one lease and a second
	shiftClaimedRow(t, e, tr.ID, passed)
	occurrence := dead.NextFireAtMs - passed

	b, _ := newCoord(t, e.pool(t, "coord-b"), Config{Owner: "replica-b"})
	var bLog claimLog
	b.testHookAfterClaim = bLog.hook(nil)
	res, err := b.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Claimed != 1 || res.Admitted != 1 || res.Skipped != 0 {
		t.Fatalf("takeover round %+v (metrics %s): the claimed occurrence was not admitted", res, metricsString(b.Metrics()))
	}
	tb := bLog.claims[0]
	if !tb.TakenOver() || tb.ObservedAtMs != dead.ObservedAtMs-passed || tb.Fence.Version != dead.Fence.Version+1 ||
		tb.NextFireAtMs != occurrence || tb.AcquiredAtMs-occurrence <= 30_000 {
		t.Fatalf("takeover claim %+v of %+v", tb, dead)
	}
	if m := b.Metrics(); m.TakenOver.Load() != 1 {
		t.Fatalf("takeovers counted %d, want 1", m.TakenOver.Load())
	}
	var key string
	var scheduled int64
	if err := e.su.QueryRow(ctx, `SELECT idempotency_key, scheduled_for_ms FROM ql3.runs WHERE trigger_id = $1`, tr.ID).
		Scan(&key, &scheduled); err != nil {
		t.Fatal(err)
	}
	if want := schedule.IdempotencyKey(tr.ID, tr.Revision, occurrence); key != want || scheduled != occurrence {
		t.Fatalf("run %q for %d, want %q", key, scheduled, want)
	}
	// No replay: the cursor is past the takeover, so the 31 occurrences
	// in between never run, whatever B and A do next.
	if next := e.count(t, `SELECT next_fire_at_ms FROM ql3.trigger_schedules WHERE trigger_id = $1`, tr.ID); next <= tb.AcquiredAtMs {
		t.Fatalf("cursor %d not past the takeover at %d", next, tb.AcquiredAtMs)
	}
	if stall {
		close(resume)
		if res := <-aDone; res.Raced != 1 || res.Admitted != 0 {
			t.Fatalf("resumed replica A: %+v, want its admission refused as raced", res)
		}
		if k := aDiags.kinds(); k["admission_refused_raced"] != 1 {
			t.Fatalf("resumed replica A reported %v, want one admission_refused_raced", k)
		}
		if !strings.Contains(a.Metrics().Summary(), " admissions_refused_raced=1 ") {
			t.Fatalf("summary %q", a.Metrics().Summary())
		}
	}
	if _, err := b.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms <= $2`, tr.ID, tb.AcquiredAtMs); n != 1 {
		t.Fatalf("%d runs at or before the takeover, want exactly the claimed occurrence", n)
	}
	assertExactlyOnce(t, e.su)
}

// TestStalledReplicaTakenOverAfterRealLease is the same as the stalled case
// above in real time, through the lifecycle loop: replica A claims with the
// default 30 s lease and stalls; replica B runs its loop (default cadence,
// woken at the claim's expiry by NextDue) and takes the occurrence over once
// the lease ran out by database time, about 30 s later. It costs that much
// wall time, in parallel with the other tests.
func TestStalledReplicaTakenOverAfterRealLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	tr := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	a, _ := newCoord(t, e.pool(t, "coord-a"), Config{Owner: "replica-a", DisableListen: true})
	initialiseAndWaitDue(t, e, a, 1)
	var aLog claimLog
	paused, resume := make(chan struct{}), make(chan struct{})
	a.testHookAfterClaim = aLog.hook(func([]controlplane.ClaimedSchedule) { close(paused); <-resume })
	aDone := make(chan RoundResult, 1)
	go func() {
		res, _ := a.Round(ctx)
		aDone <- res
	}()
	<-paused
	defer func() {
		select {
		case <-resume:
		default:
			close(resume)
		}
	}()
	claim := aLog.claims[0]

	b, _ := newCoord(t, e.pool(t, "coord-b"), Config{Owner: "replica-b", DisableListen: true})
	var bLog claimLog
	b.testHookAfterClaim = bLog.hook(nil)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for e.runsFor(t, tr.ID, claim.NextFireAtMs) == 0 {
		if time.Now().After(deadline) || b.Metrics().Skipped.Load() != 0 {
			t.Fatalf("occurrence %d not admitted after the lease ran out (B: %s)", claim.NextFireAtMs, metricsString(b.Metrics()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if res := <-aDone; res.Raced != 1 || res.Admitted != 0 {
		t.Fatalf("resumed replica A: %+v", res)
	}
	var created int64
	if err := e.su.QueryRow(ctx, `SELECT created_at_ms FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms = $2`,
		tr.ID, claim.NextFireAtMs).Scan(&created); err != nil {
		t.Fatal(err)
	}
	if created < claim.Fence.ExpiresAtMs {
		t.Fatalf("admitted at %d, before the stalled claim expired at %d", created, claim.Fence.ExpiresAtMs)
	}
	if m := b.Metrics(); m.TakenOver.Load() != 1 || m.Skipped.Load() != 0 {
		t.Fatalf("replica B: takeovers %d, skipped %d (%s)", m.TakenOver.Load(), m.Skipped.Load(), metricsString(m))
	}
	tb, ok := bLog.firstClaimOf(tr.ID, claim.Fence.Version)
	if !ok || !tb.TakenOver() || tb.ObservedAtMs != claim.ObservedAtMs {
		t.Fatalf("takeover claim %+v of %+v", tb, claim)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms <= $2`, tr.ID, tb.AcquiredAtMs); n != 1 {
		t.Fatalf("%d runs scheduled before the takeover, want only the claimed occurrence", n)
	}
	assertExactlyOnce(t, e.su)
}
