package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// fireAt is the occurrence every test trigger fires for: t0 + 1 s.
var fireAt = t0.UnixMilli() + 1000

// everySecond creates n tasks with one every-second trigger each and
// initialises their schedules (next fire at fireAt) in one group.
func everySecond(t testing.TB, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	sp := shellSpec("true")
	sp.Concurrency = spec.ConcurrencyAllow
	for i := range n {
		task := mustTask(t, s, fmt.Sprintf("g%03d", i), sp)
		if _, err := s.CreateTrigger(ctx, task.ID, edge.TriggerInput{Expression: "* * * * * *", Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	items, err := s.DueSchedules(ctx, t0.UnixMilli(), maxScheduleBatch)
	if err != nil || len(items) != n {
		t.Fatalf("due: %d %v", len(items), err)
	}
	batch := make([]edge.Decided, n)
	for i, it := range items {
		batch[i] = edge.Decided{Item: it, Decision: schedule.Decision{Kind: schedule.Init, NextFireAtMs: fireAt}}
	}
	for _, r := range s.ApplyDecisions(ctx, batch, t0.UnixMilli()) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// dueFires reads the due schedules at fireAt and returns their Fire
// decisions for fireAt.
func dueFires(t testing.TB, s *Store) []edge.Decided {
	t.Helper()
	items, err := s.DueSchedules(context.Background(), fireAt, maxScheduleBatch)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]edge.Decided, len(items))
	for i, it := range items {
		out[i] = edge.Decided{Item: it, Decision: schedule.Decision{Kind: schedule.Fire, ScheduledForMs: fireAt, NextFireAtMs: fireAt + 1000}}
	}
	return out
}

// scheduledRuns counts the runs per idempotency key.
func scheduledRuns(t testing.TB, s *Store) map[string]int {
	t.Helper()
	rows, err := s.reader.Query(`SELECT idempotency_key, count(*) FROM runs WHERE origin = 'schedule' GROUP BY idempotency_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

func TestAdmissionsOfARoundShareOneCommit(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	everySecond(t, s, 8)
	commits0, members0 := s.WriteGroups()
	batch := dueFires(t, s)
	res := s.ApplyDecisions(context.Background(), batch, fireAt)
	for i, r := range res {
		if r.Err != nil || !r.Admission.Created || r.Admission.Schedule.NextFireAtMs != fireAt+1000 ||
			r.Admission.Schedule.StateVersion != batch[i].Item.Schedule.StateVersion+1 {
			t.Fatalf("member %d: %+v", i, r)
		}
	}
	commits, members := s.WriteGroups()
	if commits-commits0 != 1 || members-members0 != 8 {
		t.Fatalf("8 admissions took %d commits carrying %d changes, want 1 and 8", commits-commits0, members-members0)
	}
	if got := scheduledRuns(t, s); len(got) != 8 {
		t.Fatalf("runs by key: %v", got)
	}
}

func TestFailingGroupMemberKeepsTheOthers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	everySecond(t, s, 3)
	batch := dueFires(t, s)
	stale := batch[1].Item
	batch[1].Item.Schedule.StateVersion-- // lost its compare-and-set
	res := s.ApplyDecisions(ctx, batch, fireAt)
	if res[0].Err != nil || !res[0].Admission.Created || res[2].Err != nil || !res[2].Admission.Created {
		t.Fatalf("the other members: %+v", res)
	}
	if errs.Code(res[1].Err) != errs.Conflict || res[1].Admission.RunID != "" {
		t.Fatalf("stale member: %+v", res[1])
	}
	if got := scheduledRuns(t, s); len(got) != 2 {
		t.Fatalf("runs by key: %v", got)
	}
	// The stale schedule is still due, at its version, and fires once.
	again := dueFires(t, s)
	if len(again) != 1 || again[0].Item.Trigger.ID != stale.Trigger.ID || again[0].Item.Schedule.StateVersion != stale.Schedule.StateVersion {
		t.Fatalf("still due: %+v", again)
	}
	if r := s.ApplyDecisions(ctx, again, fireAt); r[0].Err != nil || !r[0].Admission.Created {
		t.Fatalf("retry: %+v", r)
	}

	// A member that wrote before failing is rolled back to its savepoint;
	// one that panics gets its own error; the others commit.
	var missed [3]int64
	read := func() {
		t.Helper()
		for i, it := range batch {
			if err := s.reader.QueryRow(`SELECT missed_total FROM trigger_schedules WHERE trigger_id = ?`, it.Item.Trigger.ID).Scan(&missed[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	bump := func(id string, fail error) writeFn {
		return func(tx *wtx, _ *signals) error {
			if _, err := tx.ExecContext(ctx, `UPDATE trigger_schedules SET missed_total = missed_total + 5 WHERE trigger_id = ?`, id); err != nil {
				return err
			}
			if fail != nil {
				return fail
			}
			return nil
		}
	}
	errs2 := s.writeBatch(ctx, false, []writeFn{
		bump(batch[0].Item.Trigger.ID, nil),
		bump(batch[1].Item.Trigger.ID, errs.Invalidf("test", "member fails after writing")),
		func(tx *wtx, sg *signals) error {
			_ = bump(batch[1].Item.Trigger.ID, nil)(tx, sg)
			panic("member panics after writing")
		},
		bump(batch[2].Item.Trigger.ID, nil),
	})
	if errs2[0] != nil || errs2[3] != nil || errs.Code(errs2[1]) != errs.Invalid || errs.Code(errs2[2]) != errs.Internal {
		t.Fatalf("member errors: %v", errs2)
	}
	read()
	if missed != [3]int64{5, 0, 5} {
		t.Fatalf("missed_total after the group: %v, want [5 0 5]", missed)
	}
}

// holdWriter takes the writer token so that the next writers queue up.
func holdWriter(s *Store) (release func()) {
	s.group.token <- struct{}{}
	return func() { <-s.group.token }
}

// waitQueued yields until n requests are queued (no clock involved: the
// queued writers only need to be scheduled).
func waitQueued(s *Store, n int) {
	for {
		s.group.mu.Lock()
		q := len(s.group.queue)
		s.group.mu.Unlock()
		if q >= n {
			return
		}
		runtime.Gosched()
	}
}

func TestConcurrentWritersJoinOneGroup(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	sp := shellSpec("true")
	sp.Concurrency = spec.ConcurrencyAllow
	task := mustTask(t, s, "g", sp)
	commits0, _ := s.WriteGroups()
	const n = 16
	release := holdWriter(s)
	var wg sync.WaitGroup
	ids := make([]string, n)
	fails := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, IdempotencyKey: fmt.Sprintf("k%d", i)})
			ids[i], fails[i] = r.ID, err
		}()
	}
	waitQueued(s, n)
	release()
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if fails[i] != nil || ids[i] == "" || seen[ids[i]] {
			t.Fatalf("writer %d: %q %v", i, ids[i], fails[i])
		}
		seen[ids[i]] = true
		// Returned only after the commit: the reader sees it.
		if _, err := s.GetRun(ctx, ids[i]); err != nil {
			t.Fatalf("run %d not committed when its writer returned: %v", i, err)
		}
	}
	if commits, _ := s.WriteGroups(); commits-commits0 != 1 {
		t.Fatalf("%d queued writers took %d commits, want 1", n, commits-commits0)
	}
}

func TestGroupedPanicStaysWithItsCaller(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	task := mustTask(t, s, "g", shellSpec("true"))
	release := holdWriter(s)
	var wg sync.WaitGroup
	var panicErr, runErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		panicErr = s.writeBatch(ctx, false, []writeFn{func(*wtx, *signals) error { panic("boom") }})[0]
	}()
	waitQueued(s, 1)
	go func() {
		defer wg.Done()
		_, _, runErr = s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, IdempotencyKey: "after-panic"})
	}()
	waitQueued(s, 2)
	release()
	wg.Wait()
	if errs.Code(panicErr) != errs.Internal || runErr != nil {
		t.Fatalf("panicking member: %v; its neighbour: %v", panicErr, runErr)
	}
	if _, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, IdempotencyKey: "later"}); err != nil {
		t.Fatalf("writer after a panic: %v", err)
	}
}

func TestEndedContextSkipsOnlyItsMember(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	everySecond(t, s, 2)
	batch := dueFires(t, s)
	release := holdWriter(s)
	ended, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var first, second []edge.DecisionResult
	wg.Add(2)
	go func() { defer wg.Done(); first = s.ApplyDecisions(ended, batch[:1], fireAt) }()
	waitQueued(s, 1)
	go func() { defer wg.Done(); second = s.ApplyDecisions(context.Background(), batch[1:], fireAt) }()
	waitQueued(s, 2)
	cancel()
	release()
	wg.Wait()
	if first[0].Err == nil || second[0].Err != nil || !second[0].Admission.Created {
		t.Fatalf("ended member: %+v; the other: %+v", first, second)
	}
	if got := scheduledRuns(t, s); len(got) != 1 {
		t.Fatalf("runs by key: %v", got)
	}
}

func TestDurableMemberMakesTheGroupFull(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	sp := shellSpec("true")
	sp.Concurrency = spec.ConcurrencyAllow
	task := mustTask(t, s, "g", sp)
	queued := mustRun(t, s, task.ID, "claim-me")
	commits0, _ := s.WriteGroups()
	release := holdWriter(s)
	var wg sync.WaitGroup
	var claimErr, runErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, claimErr = s.ClaimRun(ctx, queued.ID, queued.Version, t0.UnixMilli()) // synchronous=FULL
	}()
	waitQueued(s, 1)
	go func() {
		defer wg.Done()
		_, _, runErr = s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, IdempotencyKey: "rides-along"})
	}()
	waitQueued(s, 2)
	// The claim makes the whole group FULL: a third, non-durable member
	// reads the mode from inside the group.
	var mode int
	probe := make(chan []error, 1)
	go func() {
		probe <- s.writeBatch(ctx, false, []writeFn{func(tx *wtx, _ *signals) error {
			return tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode)
		}})
	}()
	waitQueued(s, 3)
	release()
	wg.Wait()
	if e := <-probe; claimErr != nil || runErr != nil || e[0] != nil {
		t.Fatalf("claim %v, run-now %v, probe %v", claimErr, runErr, e[0])
	}
	if mode != 2 {
		t.Fatalf("synchronous inside a group with a durable member = %d, want 2 (FULL)", mode)
	}
	if commits, _ := s.WriteGroups(); commits-commits0 != 1 {
		t.Fatalf("took %d commits, want 1", commits-commits0)
	}
	var after int
	if err := s.writer.QueryRow(`PRAGMA synchronous`).Scan(&after); err != nil || after != 1 {
		t.Fatalf("synchronous after the group = %d, %v; want 1 (NORMAL)", after, err)
	}
	r, err := s.GetRun(ctx, queued.ID)
	if err != nil || r.Status != "dispatching" {
		t.Fatalf("claimed run: %+v %v", r, err)
	}
}
