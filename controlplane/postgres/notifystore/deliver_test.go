package notifystore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/notifykit"
)

// TestThreeFailuresThreeKeys: a task failing three times → three
// deliveries with distinct idempotency keys, each delivered once.
func TestThreeFailuresThreeKeys(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t)
	f := newFixture(t, hook, cn.Rule{})
	for range 3 {
		f.failRun(t)
	}
	f.replica(t, "a")
	ds := f.settled(t, 3)
	keys := map[string]bool{}
	for _, d := range ds {
		if d.Status != notifykit.StatusDelivered || d.Kind != string(cn.KindFailed) || len(d.AttemptLog) != 1 {
			t.Errorf("delivery %+v: want one delivered attempt of kind failed", d)
		}
		keys[d.Key] = true
	}
	if len(ds) != 3 || len(keys) != 3 {
		t.Fatalf("%d deliveries with %d distinct keys, want 3 and 3", len(ds), len(keys))
	}
	for k := range keys {
		if hook.accepted(k) != 1 {
			t.Errorf("key %s accepted %d times, want 1", k, hook.accepted(k))
		}
	}
}

// TestRetriesUntilAccepted: the receiver answers 500, 500, 200 → one
// success, the two failures in the delivery log.
func TestRetriesUntilAccepted(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t, 500, 500, 200)
	f := newFixture(t, hook, cn.Rule{})
	f.failRun(t)
	f.replica(t, "a")
	ds := f.settled(t, 1)
	d := ds[0]
	if d.Status != notifykit.StatusDelivered || d.Attempts != 3 || len(d.AttemptLog) != 3 {
		t.Fatalf("delivery %+v: want delivered after 3 attempts", d)
	}
	for i, want := range []int{500, 500, 200} {
		if a := d.AttemptLog[i]; a.StatusCode != want || (want == 500) != (a.Error != "") {
			t.Errorf("attempt %d = %+v, want status %d", i+1, a, want)
		}
	}
	if hook.served != 3 || hook.accepted(d.Key) != 1 {
		t.Fatalf("receiver served %d, accepted %d, want 3 and 1", hook.served, hook.accepted(d.Key))
	}
}

// TestTwoReplicasNeverOverlapOnARow: two replicas deliver 40 failures.
// The receiver holds every request until 20 are in flight at once (more
// than one replica's batch of 16: both replicas are sending) and fails the
// first 12 answers, so rows are retried and claims churn. No key is ever
// in flight twice, each is accepted once, and both replicas made attempts.
func TestTwoReplicasNeverOverlapOnARow(t *testing.T) {
	t.Parallel()
	answers := make([]int, 12)
	for i := range answers {
		answers[i] = 503
	}
	hook := newReceiver(t, answers...)
	hook.gateAt, hook.gate = 20, make(chan struct{})
	f := newFixture(t, hook, cn.Rule{})
	for range 40 {
		f.failRun(t)
	}
	f.replicaWith(t, "a", 6*time.Second, 10*time.Second)
	f.replicaWith(t, "b", 6*time.Second, 10*time.Second)
	ds := f.settled(t, 40)
	for _, d := range ds {
		if d.Status != notifykit.StatusDelivered || hook.accepted(d.Key) != 1 {
			t.Errorf("delivery %d: status %s, accepted %d times", d.ID, d.Status, hook.accepted(d.Key))
		}
	}
	var replicas int
	if err := f.SU.QueryRow(context.Background(), `SELECT count(DISTINCT owner) FROM ql3.notify_attempts`).Scan(&replicas); err != nil {
		t.Fatal(err)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if hook.maxInFlight != 1 || replicas != 2 {
		t.Fatalf("a notification was in flight %d times at once; attempts by %d replicas, want 1 and 2", hook.maxInFlight, replicas)
	}
}

// TestReplicaKilledMidDelivery: replica a claims the row and dies while
// its request is in flight (its context and pool end); replica b sends it
// after a's lease, and the row is delivered, by b.
func TestReplicaKilledMidDelivery(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t)
	hook.hold, hook.arrived = make(chan struct{}), make(chan string, 8)
	f := newFixture(t, hook, cn.Rule{})
	f.failRun(t)
	stopA, _ := f.replica(t, "a")
	<-hook.arrived // a's request is at the receiver
	stopA()
	hook.mu.Lock()
	hook.hold = nil
	hook.mu.Unlock()
	f.replica(t, "b")
	ds := f.settled(t, 1)
	if ds[0].Status != notifykit.StatusDelivered || hook.accepted(ds[0].Key) != 1 {
		t.Fatalf("delivery %+v: want delivered once after the takeover", ds[0])
	}
	var owner string
	if err := f.SU.QueryRow(context.Background(), `SELECT owner FROM ql3.notify_attempts WHERE outbox_id = $1 ORDER BY n DESC LIMIT 1`,
		ds[0].ID).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner != "b" || hook.maxInFlight != 1 {
		t.Fatalf("delivered by %q with %d in flight at once, want b and 1", owner, hook.maxInFlight)
	}
}

// TestCredentialsNeverStoredOrAnswered: the channel's token (in its URL)
// and secret are in no column of the database as text, in no API view and
// in no delivery's error.
func TestCredentialsNeverStoredOrAnswered(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t, 500)
	f := newFixture(t, hook, cn.Rule{})
	f.failRun(t)
	f.replica(t, "a")
	f.settled(t, 1)
	ctx := context.Background()
	var dump strings.Builder
	for _, table := range []string{"notify_channels", "notify_rules", "notify_outbox", "notify_attempts", "notify_keys", "audit_log"} {
		rows, err := f.SU.Query(ctx, `SELECT t::text FROM ql3.`+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			dump.WriteString(s)
		}
		rows.Close()
	}
	ch, _ := f.config.GetChannel(ctx, f.ProjectID, f.channel.ID)
	list, _ := f.config.ListChannels(ctx, f.ProjectID)
	ds, _ := f.config.ListDeliveries(ctx, f.ProjectID, notifykit.DeliveryFilter{Limit: 10})
	for _, v := range []any{ch, list, ds} {
		b, _ := json.Marshal(v)
		dump.Write(b)
	}
	for _, secret := range []string{hookToken, hookSecret} {
		if strings.Contains(dump.String(), secret) {
			t.Errorf("credential %q found in the database or an API view", secret)
		}
	}
	if !strings.Contains(strings.Join(ch.Public.SecretsSet, ","), "secret") {
		t.Fatalf("public view %+v does not say the secret is set", ch.Public)
	}
}

// TestSendTestNow: a queued "send test" is sent at once by DeliverNow and
// audited; a second DeliverNow of the sent row sends nothing.
func TestSendTestNow(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t)
	f := newFixture(t, hook, cn.Rule{})
	_, d := f.replica(t, "a")
	ctx := context.Background()
	id, err := f.config.QueueTest(ctx, f.ProjectID, f.channel.ID, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.DeliverNow(ctx, id)
	if err != nil || got.Status != notifykit.StatusDelivered || got.Kind != notifykit.KindTest {
		t.Fatalf("DeliverNow = %+v, %v", got, err)
	}
	if _, err := d.DeliverNow(ctx, id); err != nil || hook.served != 1 {
		t.Fatalf("second DeliverNow: %v, receiver served %d, want 1", err, hook.served)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.audit_log WHERE action = $1`, notifykit.AuditChannelTest); n != 1 {
		t.Fatalf("%d audit lines of the test, want 1", n)
	}
}

// TestCoalescingCapsAFlappingTask: a rule that sends at most one message
// per task per second gets three failures at once: one is sent, and when
// the window ends with no later outcome the holder of the feed consumer
// writes one summary of the two held back.
func TestCoalescingCapsAFlappingTask(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t)
	f := newFixture(t, hook, cn.Rule{Coalesce: cn.Coalesce{Max: 1, WindowMs: 1000}})
	for range 3 {
		f.failRun(t)
	}
	f.replica(t, "a")
	ds := f.settled(t, 2)
	kinds := map[string]int{}
	for _, d := range ds {
		if d.Status != notifykit.StatusDelivered {
			t.Errorf("delivery %+v not delivered", d)
		}
		kinds[d.Kind]++
		if d.Kind == notifykit.KindSummary && !strings.Contains(d.Title+d.Content, "2") {
			t.Errorf("summary %q / %q does not count the 2 held back", d.Title, d.Content)
		}
	}
	if len(ds) != 2 || kinds[string(cn.KindFailed)] != 1 || kinds[notifykit.KindSummary] != 1 {
		t.Fatalf("deliveries by kind %v, want one failed and one summary", kinds)
	}
}
