package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// feedFixture: one database, two replicas' runtime pools (each its own
// Feed), the superuser connection that writes events, and one queued Run
// to hang them on.
type feedFixture struct {
	a, b  *postgres.Feed
	su    lifeFixture
	runID uuid.UUID
	seq   int64
}

func newFeedFixture(t *testing.T) *feedFixture {
	t.Helper()
	lf := newLifeFixture(t)
	runID, _ := lf.Run(t, lifeRun{Status: "queued", Attempt: "claimed"})
	db := lf.DB
	return &feedFixture{a: postgres.NewFeed(db.Pool(t, postgres.RoleRuntime)), b: postgres.NewFeed(db.Pool(t, postgres.RoleRuntime)),
		su: lf, runID: runID, seq: 100}
}

// event commits one event of the fixture's Run in its own transaction and
// returns its (run, sequence) key.
func (f *feedFixture) event(t *testing.T) string {
	t.Helper()
	f.seq++
	f.su.Exec(t, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, payload, created_at_ms)
		SELECT run_id, $2::bigint, project_id, 'run.test', jsonb_build_object('n', $2::bigint), 1 FROM ql3.runs WHERE run_id = $1::uuid`,
		f.runID, f.seq)
	return fmt.Sprintf("%s/%d", f.runID, f.seq)
}

// read returns the next n events after cursor. The feed's horizon is the
// oldest transaction running anywhere on the server (pg_snapshot_xmin), so
// another test's open transaction can hold events back for a moment (never
// reorder or skip them): read waits for them through the feed's own
// wake-up, polling every 10 ms, for at most 30 s.
func read(t *testing.T, feed *postgres.Feed, cursor controlplane.FeedPosition, n int) []controlplane.FeedEvent {
	t.Helper()
	// The feed shows only transactions below the cluster-wide snapshot
	// xmin, and the package's parallel tests share one server: their
	// CREATE DATABASE clones (a copy and a checkpoint in one transaction)
	// hold the horizon back for seconds each on a loaded machine. The
	// budget is for that wait, not for the feed (alone it answers in ms).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var out []controlplane.FeedEvent
	for len(out) < n {
		evs, err := feed.Events(ctx, cursor, n-len(out))
		if err != nil {
			t.Fatalf("events after %+v: %v", cursor, err)
		}
		out = append(out, evs...)
		if len(evs) > 0 {
			cursor = evs[len(evs)-1].Position
		}
		if len(out) < n {
			if err := feed.Wait(ctx, cursor, tick.C); err != nil {
				t.Fatalf("waiting for %d more events after %+v: %v", n-len(out), cursor, err)
			}
		}
	}
	return out
}

func keys(evs []controlplane.FeedEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s/%d", e.RunID, e.Seq)
	}
	return out
}

// TestFeedConsumerClaimedByOneReplicaAndTakenOverFromItsCursor: two
// replicas run the consumer "notify"; only one holds the claim. The holder
// reads and stores its cursor; once its lease has passed (database time,
// set back here instead of waited for) the other takes the consumer over
// from the stored cursor, the old holder's advance is refused, and every
// event is read exactly once, in order.
func TestFeedConsumerClaimedByOneReplicaAndTakenOverFromItsCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFeedFixture(t)
	var want []string
	for range 7 {
		want = append(want, f.event(t))
	}

	ca, ok, err := f.a.Claim(ctx, "notify", "replica-a", 30*time.Second)
	if err != nil || !ok || ca.Cursor != (controlplane.FeedPosition{}) || ca.Version != 1 {
		t.Fatalf("a claims: %+v %v %v", ca, ok, err)
	}
	if cb, ok, err := f.b.Claim(ctx, "notify", "replica-b", 30*time.Second); err != nil || ok {
		t.Fatalf("b claimed a consumer a holds: %+v %v %v", cb, ok, err)
	}
	if again, ok, err := f.a.Claim(ctx, "notify", "replica-a", 30*time.Second); err != nil || !ok || again.Token != ca.Token || again.Version != ca.Version {
		t.Fatalf("a renews: %+v %v %v, want the same token and version", again, ok, err)
	}

	var seen []string
	page := read(t, f.a, ca.Cursor, 3)
	seen = append(seen, keys(page)...)
	if ca, err = f.a.Advance(ctx, ca, page[len(page)-1].Position); err != nil {
		t.Fatalf("a advances: %v", err)
	}
	// a reads the next page but dies before storing it.
	read(t, f.a, ca.Cursor, 2)
	f.su.Exec(t, `UPDATE ql3.run_event_consumers SET claim_expires_at_ms = 0 WHERE consumer = 'notify'`)

	cb, ok, err := f.b.Claim(ctx, "notify", "replica-b", 30*time.Second)
	if err != nil || !ok || cb.Cursor != ca.Cursor || cb.Version != ca.Version+1 || cb.Token == ca.Token {
		t.Fatalf("b takes over: %+v %v %v, want a's cursor %+v and a new fence", cb, ok, err, ca.Cursor)
	}
	if _, err := f.a.Advance(ctx, ca, ca.Cursor); errs.Code(err) != errs.Conflict {
		t.Fatalf("a advances after the takeover: %v, want a conflict", err)
	}
	if _, ok, err := f.a.Claim(ctx, "notify", "replica-a", 30*time.Second); err != nil || ok {
		t.Fatalf("a claims back while b holds it: %v %v", ok, err)
	}
	for len(seen) < len(want) {
		page := read(t, f.b, cb.Cursor, min(2, len(want)-len(seen)))
		seen = append(seen, keys(page)...)
		if cb, err = f.b.Advance(ctx, cb, page[len(page)-1].Position); err != nil {
			t.Fatalf("b advances: %v", err)
		}
	}
	if more, err := f.b.Events(ctx, cb.Cursor, 10); err != nil || len(more) != 0 {
		t.Fatalf("events past the last one: %v %v", keys(more), err)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("read %v, want every event once in order %v", seen, want)
	}
	if _, err := f.b.Advance(ctx, cb, controlplane.FeedPosition{}); errs.Code(err) != errs.Conflict {
		t.Fatalf("cursor moved back: %v", err)
	}
}

// TestFeedNeverSkipsALaterCommit: an event written by a transaction that
// is still open when a later one commits is not jumped over: the reader
// sees neither until the first commits, then both, in transaction order.
// The wake-up returns once there is something to read.
func TestFeedNeverSkipsALaterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFeedFixture(t)
	f.event(t)
	cursor := read(t, f.a, controlplane.FeedPosition{}, 1)[0].Position

	first := f.su.DB.Conn(t)
	tx, err := first.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, created_at_ms)
		SELECT run_id, 500, project_id, 'run.test', 1 FROM ql3.runs WHERE run_id = $1::uuid`, f.runID); err != nil {
		t.Fatal(err)
	}
	later := f.event(t) // commits while the first transaction is open

	if got, err := f.a.Events(ctx, cursor, 10); err != nil || len(got) != 0 {
		t.Fatalf("while an older transaction is open: %v %v, want nothing", keys(got), err)
	}
	tick := make(chan time.Time)
	woke := make(chan error, 1)
	go func() { woke <- f.b.Wait(ctx, cursor, tick) }()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	close(tick) // every later probe finds the events
	if err := <-woke; err != nil {
		t.Fatalf("wait: %v", err)
	}
	got := read(t, f.a, cursor, 2)
	if want := []string{fmt.Sprintf("%s/500", f.runID), later}; !slices.Equal(keys(got), want) {
		t.Fatalf("after the commit: %v, want %v", keys(got), want)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.a.Wait(stopped, got[1].Position, make(chan time.Time)); err != context.Canceled {
		t.Fatalf("wait with nothing new and a cancelled context: %v", err)
	}
	if _, err := f.a.Events(ctx, cursor, 0); errs.Field(err) != "limit" {
		t.Fatalf("limit 0: %v", err)
	}
	if _, _, err := f.a.Claim(ctx, "Notify!", "a", time.Second); errs.Field(err) != "consumer" {
		t.Fatalf("bad consumer name: %v", err)
	}
}

// TestFeedPagesInNumericXidOrderAcrossDigitBoundaries: events whose
// transaction ids cross a decimal digit boundary (9 → 10, 999 → 1000, …)
// come out in numeric order, page after page, none skipped. The feed once
// sorted its page by the xid's text ("1002" < "990") while filtering by
// number, and moved the cursor past events it had not returned; a fresh
// server crosses xid 1000 early, so the notification tests lost the
// first failures now and then. The events are planted with explicit,
// long-committed xids so a boundary is crossed every run.
func TestFeedPagesInNumericXidOrderAcrossDigitBoundaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFeedFixture(t)
	// Below any live xid: initdb alone uses several hundred.
	xids := []uint64{3, 9, 10, 11, 98, 99, 100, 101}
	var want []string
	plant := func(xid uint64) {
		f.seq++
		f.su.Exec(t, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, created_at_ms, feed_xid)
			SELECT run_id, $2::bigint, project_id, 'run.test', 1, $3::text::xid8 FROM ql3.runs WHERE run_id = $1::uuid`,
			f.runID, f.seq, fmt.Sprint(xid))
		want = append(want, fmt.Sprintf("%s/%d", f.runID, f.seq))
	}
	for i, x := range xids {
		plant(x)
		if i%3 == 0 { // two events of one transaction keep their insertion order
			plant(x)
		}
	}
	for _, page := range []int{1, 2, 3, 5, 16} {
		var got []controlplane.FeedEvent
		cursor := controlplane.FeedPosition{}
		for {
			evs, err := f.a.Events(ctx, cursor, page)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range evs {
				prev := cursor
				if i > 0 {
					prev = evs[i-1].Position
				}
				if e.Position.Xid < prev.Xid || (e.Position.Xid == prev.Xid && e.Position.ID <= prev.ID) {
					t.Fatalf("page %d: position %+v after %+v", page, e.Position, prev)
				}
			}
			got = append(got, evs...)
			if len(evs) < page {
				break
			}
			cursor = evs[len(evs)-1].Position
		}
		if !slices.Equal(keys(got), want) {
			t.Fatalf("pages of %d: %v, want %v", page, keys(got), want)
		}
	}
}
