package coordinator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/faultproxy"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	pgschedule "github.com/ql3/ql3/controlplane/postgres/schedule"
	"github.com/ql3/ql3/core/schedule"
)

// claimLog records the claims a coordinator was granted (test hook).
type claimLog struct {
	mu     sync.Mutex
	claims []controlplane.ClaimedSchedule
}

func (l *claimLog) hook(extra func([]controlplane.ClaimedSchedule)) func([]controlplane.ClaimedSchedule) {
	return func(cs []controlplane.ClaimedSchedule) {
		l.mu.Lock()
		l.claims = append(l.claims, cs...)
		l.mu.Unlock()
		if extra != nil {
			extra(cs)
		}
	}
}

// firstClaimOf returns the first claim of trigger with a version above
// minVersion.
func (l *claimLog) firstClaimOf(triggerID string, minVersion int64) (controlplane.ClaimedSchedule, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.claims {
		if c.TriggerID.String() == triggerID && c.Fence.Version > minVersion {
			return c, true
		}
	}
	return controlplane.ClaimedSchedule{}, false
}

// initialiseAndWaitDue runs rounds until every trigger's cursor is set,
// then waits (database time) until all of them are due.
func initialiseAndWaitDue(t *testing.T, e env, c *Coordinator, n int64) {
	t.Helper()
	roundUntil(t, c, 30*time.Second, func() bool {
		return e.count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE next_fire_at_ms IS NOT NULL`) == n
	})
	due := e.count(t, `SELECT max(next_fire_at_ms) FROM ql3.trigger_schedules`)
	for e.dbNowMs(t) < due {
		time.Sleep(20 * time.Millisecond)
	}
}

func (e env) runsFor(t *testing.T, triggerID string, scheduledFor int64) int64 {
	return e.count(t, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms = $2`, triggerID, scheduledFor)
}

// TestKilledReplicaIsTakenOverOnlyAfterExpiry: replica A claims due rows
// and its pool is closed before it can admit (the replica dies
// mid-round). Replica B takes every one of those rows over only once the
// claim expired by database time, with claim_version + 1, and admits each
// occurrence exactly once.
func TestKilledReplicaIsTakenOverOnlyAfterExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	trs := e.triggers(t, 40, "* * * * * *")
	poolA := e.pool(t, "coord-a")
	a, _ := newCoord(t, poolA, Config{Owner: "replica-a", Lease: 2 * time.Second, Budget: 64})
	initialiseAndWaitDue(t, e, a, int64(len(trs)))

	var aLog claimLog
	a.testHookAfterClaim = aLog.hook(func([]controlplane.ClaimedSchedule) { poolA.Close() })
	res, err := a.Round(context.Background())
	if err != nil || res.Claimed == 0 || res.Admitted != 0 || res.Unresolved != res.Claimed {
		t.Fatalf("killed round: %+v %v", res, err)
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE claim_owner = 'replica-a'`); n != int64(res.Claimed) {
		t.Fatalf("%d claims held by the dead replica, want %d", n, res.Claimed)
	}

	b, _ := newCoord(t, e.pool(t, "coord-b"), Config{Owner: "replica-b", Lease: 2 * time.Second, Budget: 64})
	var bLog claimLog
	b.testHookAfterClaim = bLog.hook(nil)
	dead := aLog.claims
	roundUntil(t, b, 60*time.Second, func() bool {
		for _, c := range dead {
			if e.runsFor(t, c.TriggerID.String(), c.NextFireAtMs) != 1 {
				return false
			}
		}
		return true
	})
	for _, c := range dead {
		tb, ok := bLog.firstClaimOf(c.TriggerID.String(), c.Fence.Version)
		if !ok {
			t.Fatalf("trigger %s: no takeover claim", c.TriggerID)
		}
		if tb.Fence.Version != c.Fence.Version+1 || tb.AcquiredAtMs < c.Fence.ExpiresAtMs || tb.NextFireAtMs != c.NextFireAtMs {
			t.Fatalf("takeover %+v of dead claim %+v: want version+1, acquired at or after expiry, same cursor", tb, c)
		}
	}
	if m := b.Metrics(); m.Raced.Load() != 0 {
		t.Fatalf("replica B raced: %s", metricsString(m))
	}
	assertExactlyOnce(t, e.su)
}

// TestTerminateBackendMidAdmissionAndIdle: pg_terminate_backend on the
// backend running an admission (held at a lock so it is mid-transaction)
// rolls it back; the claim runs out and the occurrence is admitted once.
// Terminating the pool's idle backends afterwards only costs a round.
func TestTerminateBackendMidAdmissionAndIdle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	tr := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	pool := e.pool(t, "coord-term")
	c, _ := newCoord(t, pool, Config{Owner: "replica-t", Lease: time.Second})
	initialiseAndWaitDue(t, e, c, 1)

	// Hold the admission at a lock on ql3.runs.
	locker := e.db.Conn(t)
	lockTx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTx.Exec(ctx, "LOCK TABLE ql3.runs IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var log claimLog
	c.testHookAfterClaim = log.hook(nil)
	done := make(chan RoundResult, 1)
	go func() {
		res, _ := c.Round(ctx)
		done <- res
	}()
	var pid int64
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if time.Now().After(deadline) {
			t.Fatal("admission never blocked on the lock")
		}
		_ = e.su.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE application_name = 'coord-term'
			AND wait_event_type = 'Lock'`).Scan(&pid)
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.db.Cluster.TerminateBackend(ctx, uint32(pid)); err != nil {
		t.Fatal(err)
	}
	if err := lockTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Claimed != 1 || res.Admitted != 0 || res.Unresolved != 1 {
		t.Fatalf("terminated round: %+v", res)
	}
	first := log.claims[0]
	if n := e.count(t, `SELECT count(*) FROM ql3.runs`); n != 0 {
		t.Fatalf("%d runs after the admission backend was terminated", n)
	}
	roundUntil(t, c, 30*time.Second, func() bool { return e.runsFor(t, tr.ID, first.NextFireAtMs) == 1 })
	retake, ok := log.firstClaimOf(tr.ID, first.Fence.Version)
	if !ok || retake.Fence.Version != first.Fence.Version+1 || retake.AcquiredAtMs < first.Fence.ExpiresAtMs {
		t.Fatalf("re-claim %+v after terminated admission %+v", retake, first)
	}

	// Idle pooled connections killed: the pool replaces them.
	if _, err := e.su.Exec(ctx, `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
		WHERE application_name = 'coord-term' AND state = 'idle'`); err != nil {
		t.Fatal(err)
	}
	before := c.Metrics().Admitted.Load()
	roundUntil(t, c, 30*time.Second, func() bool { return c.Metrics().Admitted.Load() >= before+2 })
	if _, err := c.Round(ctx); err != nil {
		t.Fatalf("pool did not recover: %v", err)
	}
	assertExactlyOnce(t, e.su)
}

// TestCommitResponseLoss: the admission's COMMIT reaches the server and
// commits, but the coordinator only sees the connection drop. It must not
// create a second Run, and a fresh coordinator's startup recovery leaves
// the pristine queued Run and claimed Attempt alone.
func TestCommitResponseLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	tr := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	cl := e.db.Cluster
	proxy, err := faultproxy.Start(fmt.Sprintf("127.0.0.1:%d", cl.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable connect_timeout=10",
		proxy.Port(), postgres.RoleRuntime, cl.Password(), e.db.Name)
	c, _ := newCoord(t, runtimePool(t, dsn, "coord-lossy"), Config{Owner: "replica-lossy", Lease: time.Second})
	initialiseAndWaitDue(t, e, c, 1)

	// Armed after the claim (whose own pipeline ends in COMMIT too), so the
	// admission's COMMIT is the one whose response is lost.
	var log claimLog
	var arm sync.Once
	c.testHookAfterClaim = log.hook(func([]controlplane.ClaimedSchedule) { arm.Do(proxy.ArmCommitLoss) })
	res, err := c.Round(ctx)
	if err != nil || res.Claimed != 1 || res.Admitted != 0 || res.Unresolved != 1 || res.Retries != 0 {
		t.Fatalf("round with lost COMMIT response: %+v %v", res, err)
	}
	select {
	case <-proxy.Fired():
	default:
		t.Fatal("the proxy did not drop a COMMIT response")
	}
	if m := c.Metrics(); m.CommitUnknown.Load() != 1 {
		t.Fatalf("commit-unknown not counted: %s", metricsString(m))
	}
	occurrence := log.claims[0].NextFireAtMs
	if n := e.runsFor(t, tr.ID, occurrence); n != 1 {
		t.Fatalf("%d runs for the occurrence whose COMMIT response was lost, want 1 (it committed)", n)
	}
	// The same coordinator carries on: the occurrence is never admitted again.
	roundUntil(t, c, 30*time.Second, func() bool { return c.Metrics().Admitted.Load() >= 1 })
	if n := e.runsFor(t, tr.ID, occurrence); n != 1 {
		t.Fatalf("%d runs for the occurrence after more rounds", n)
	}
	var attemptVersion int64
	var attemptStatus string
	if err := e.su.QueryRow(ctx, `SELECT a.version, a.status FROM ql3.attempts a JOIN ql3.runs r USING (run_id)
		WHERE r.trigger_id = $1 AND r.scheduled_for_ms = $2`, tr.ID, occurrence).Scan(&attemptVersion, &attemptStatus); err != nil {
		t.Fatal(err)
	}
	fresh, diags := newCoord(t, e.pool(t, "coord-fresh"), Config{Owner: "replica-fresh"})
	rep, err := fresh.Recover(ctx)
	if err != nil || rep.Sweep.Changed() != 0 {
		t.Fatalf("startup recovery: %+v %v (diagnostics %v)", rep, err, diags.kinds())
	}
	var v2 int64
	var s2 string
	if err := e.su.QueryRow(ctx, `SELECT a.version, a.status FROM ql3.attempts a JOIN ql3.runs r USING (run_id)
		WHERE r.trigger_id = $1 AND r.scheduled_for_ms = $2`, tr.ID, occurrence).Scan(&v2, &s2); err != nil {
		t.Fatal(err)
	}
	if v2 != attemptVersion || s2 != attemptStatus || s2 != "claimed" {
		t.Fatalf("recovery touched the pristine attempt: %d %s → %d %s", attemptVersion, attemptStatus, v2, s2)
	}
	assertExactlyOnce(t, e.su)
}

// TestPromotionTakeoverAfterClaimExpiry: a claim is taken on the primary
// and replicated to a streaming standby; the primary dies, the standby is
// promoted, and fresh coordinators against it take the row over only after
// the claim expired by database time. Exactly one Run for the occurrence.
func TestPromotionTakeoverAfterClaimExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := pgtest.NewCluster(t)
	db := primary.NewDB(t)
	e := newEnvOn(t, db)
	tr := e.trigger(t, "* * * * * *", "UTC", schedule.MisfireSkip)
	standby := primary.StartStandby(t)

	initer, _ := newCoord(t, e.pool(t, "coord-init"), Config{Owner: "replica-init"})
	initialiseAndWaitDue(t, e, initer, 1)
	held, err := pgschedule.ClaimSchedules(ctx, e.pool(t, "coord-old"), controlplane.ClaimRequest{Owner: "replica-old", Budget: 1, Lease: 3 * time.Second})
	if err != nil || len(held) != 1 {
		t.Fatalf("claim on the primary: %v %v", held, err)
	}
	claim := held[0]
	if err := primary.WaitReplayed(ctx, standby); err != nil {
		t.Fatal(err)
	}
	sconn, err := standby.Connect(ctx, db.Name)
	if err != nil {
		t.Fatal(err)
	}
	var owner string
	var version int64
	var token [16]byte
	if err := sconn.QueryRow(ctx, `SELECT claim_owner, claim_version, claim_token FROM ql3.trigger_schedules WHERE trigger_id = $1`,
		tr.ID).Scan(&owner, &version, &token); err != nil {
		t.Fatal(err)
	}
	_ = sconn.Close(ctx)
	if owner != "replica-old" || version != claim.Fence.Version || token != claim.Fence.Token {
		t.Fatalf("standby sees claim %s v%d, want the primary's %s v%d", owner, version, claim.Fence.Owner, claim.Fence.Version)
	}
	remaining := claim.Fence.ExpiresAtMs - e.dbNowMs(t)
	if n := e.runsFor(t, tr.ID, claim.NextFireAtMs); n != 0 {
		t.Fatalf("%d runs before failover", n)
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("claim had %d ms left (database time) when the primary was killed", remaining)

	sdb := &pgtest.DB{Cluster: standby, Name: db.Name}
	var logs [2]claimLog
	var coords [2]*Coordinator
	for i := range coords {
		coords[i], _ = newCoord(t, runtimePool(t, sdb.DSN(postgres.RoleRuntime), fmt.Sprintf("coord-new-%d", i)),
			Config{Owner: fmt.Sprintf("replica-new-%d", i), Lease: 3 * time.Second})
		coords[i].testHookAfterClaim = logs[i].hook(nil)
	}
	su := sdb.Conn(t)
	runsFor := func() int64 {
		var n int64
		if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms = $2`,
			tr.ID, claim.NextFireAtMs).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; runsFor() != 1; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no takeover on the promoted standby")
		}
		_, _ = coords[i%2].Round(ctx)
		time.Sleep(50 * time.Millisecond)
	}
	var takeover controlplane.ClaimedSchedule
	for i := range logs {
		if c, ok := logs[i].firstClaimOf(tr.ID, claim.Fence.Version); ok && (takeover.Fence.Owner == "" || c.Fence.Version < takeover.Fence.Version) {
			takeover = c
		}
	}
	if takeover.Fence.Version != claim.Fence.Version+1 || takeover.AcquiredAtMs < claim.Fence.ExpiresAtMs || takeover.NextFireAtMs != claim.NextFireAtMs {
		t.Fatalf("takeover %+v of replicated claim %+v", takeover, claim)
	}
	var runs, attempts, events int64
	if err := su.QueryRow(ctx, `SELECT count(*), (SELECT count(*) FROM ql3.attempts a JOIN ql3.runs r USING (run_id)
		WHERE r.trigger_id = $1 AND r.scheduled_for_ms = $2 AND a.status = 'claimed'),
		(SELECT count(*) FROM ql3.run_events v JOIN ql3.runs r USING (run_id) WHERE r.trigger_id = $1 AND r.scheduled_for_ms = $2)
		FROM ql3.runs WHERE trigger_id = $1 AND scheduled_for_ms = $2 AND status = 'queued'`, tr.ID, claim.NextFireAtMs).
		Scan(&runs, &attempts, &events); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || attempts != 1 || events != 2 {
		t.Fatalf("occurrence after promotion: %d queued runs, %d claimed attempts, %d events; want 1, 1, 2", runs, attempts, events)
	}
	assertExactlyOnce(t, su)
}
