package notifystore_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/notifyd"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
	"github.com/ql3/ql3/core/envseal"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
	"github.com/ql3/ql3/notifykit/sender"
)

// Credentials the tests plant and then look for everywhere.
const (
	hookToken  = "tok-IN-URL-9f3c2a7b"
	hookSecret = "hmac-SECRET-5d1e8c40"
)

// receiver is a webhook that answers from a script, counts requests per
// idempotency key and records the most requests of one key in flight at
// once (two replicas must never overlap on one row).
type receiver struct {
	srv *httptest.Server

	mu          sync.Mutex
	answers     []int // status per request, in arrival order; then 200
	served      int
	byKey       map[string]int
	ok          map[string]int
	inFlight    map[string]int
	maxInFlight int
	hold        chan struct{} // when set, requests wait on it (or their context)
	gateAt      int           // when > 0, requests wait until this many are in flight at once
	gate        chan struct{}
	total       int         // requests in flight now
	arrived     chan string // each request's key, when set
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{answers: answers, byKey: map[string]int{}, ok: map[string]int{}, inFlight: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		key := req.Header.Get(channel.HeaderIdempotencyKey)
		// Read the body whole: only then does the server watch the
		// connection and cancel the request when the client goes away.
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.byKey[key]++
		r.inFlight[key]++
		r.maxInFlight = max(r.maxInFlight, r.inFlight[key])
		status := 200
		if r.served < len(r.answers) {
			status = r.answers[r.served]
		}
		r.served++
		r.total++
		if r.gateAt > 0 && r.total >= r.gateAt && r.gate != nil {
			close(r.gate)
			r.gate = nil
		}
		hold, arrived, gate := r.hold, r.arrived, r.gate
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight[key]--
			r.total--
			r.mu.Unlock()
		}()
		if gate != nil {
			select {
			case <-gate:
			case <-req.Context().Done():
				return
			}
		}
		if arrived != nil {
			arrived <- key
		}
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		if status == 200 {
			r.mu.Lock()
			r.ok[key]++
			r.mu.Unlock()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// fixture: a database with a project and task (pgfixture.Life), the admin
// port, runtime pools per replica, and one webhook channel with a rule.
type fixture struct {
	pgfixture.Life
	kek     envseal.KEK
	cipher  *envseal.Cipher
	config  *notifystore.Config
	channel notifykit.Channel
	rule    notifykit.Rule
	seq     int64
}

func newFixture(t *testing.T, hook *receiver, rule cn.Rule) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{Life: pgfixture.NewLife(t)}
	var err error
	if f.kek, err = envseal.NewKEK(); err != nil {
		t.Fatal(err)
	}
	if f.cipher, err = notifystore.OpenCipher(ctx, f.Runtime, f.kek); err != nil {
		t.Fatal(err)
	}
	f.config = notifystore.NewConfig(f.DB.Pool(t, postgres.RoleAdmin), f.cipher)
	f.channel, err = f.config.CreateChannel(ctx, f.ProjectID, notifykit.ChannelInput{Name: "hook", Enabled: true,
		Settings: channel.Settings{Kind: channel.Webhook, Server: hook.srv.URL + "/hook?token=" + hookToken, Secret: hookSecret}})
	if err != nil {
		t.Fatal(err)
	}
	rule.Channels = []string{f.channel.ID}
	rule.Enabled = true
	if f.rule, err = f.config.CreateRule(ctx, f.ProjectID, notifykit.RuleInput{Name: "failures", Rule: rule}); err != nil {
		t.Fatal(err)
	}
	f.seq = 100
	return f
}

// failRun writes a failed Run and its run.failed event.
func (f *fixture) failRun(t *testing.T) uuid.UUID {
	t.Helper()
	runID, _ := f.Run(t, pgfixture.LifeRun{Status: "failed", Attempt: "failed"})
	f.seq++
	f.Exec(t, `INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
		SELECT run_id, $2::bigint, project_id, 1, 'run.failed', '{"attemptNumber":1,"errorClass":"process_exit","exitCode":3}', `+pgfixture.NowSQL+`
		FROM ql3.runs WHERE run_id = $1::uuid`, runID, f.seq)
	return runID
}

// replica starts a deliverer on its own runtime pool; stop cancels it and
// closes the pool (a replica that dies).
func (f *fixture) replica(t *testing.T, owner string) (stop func(), d *notifyd.Deliverer) {
	t.Helper()
	return f.replicaWith(t, owner, time.Second, 3*time.Second)
}

// replicaWith sets the request timeout and the claim lease (margin 1 s).
func (f *fixture) replicaWith(t *testing.T, owner string, timeout, lease time.Duration) (func(), *notifyd.Deliverer) {
	t.Helper()
	pool := f.DB.Pool(t, postgres.RoleRuntime)
	d, err := notifyd.New(notifyd.Config{Feed: postgres.NewFeed(pool), Consumers: postgres.NewFeed(pool),
		Outbox: notifystore.NewOutbox(pool, f.cipher), Owner: owner,
		Sender: &sender.Sender{Timeout: timeout}, Lease: lease, LeaseMargin: time.Second,
		Policy: notifykit.Policy{RetryBase: 20 * time.Millisecond, RetryMax: 40 * time.Millisecond, Jitter: func() float64 { return 0.5 }},
		Tick:   20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(tlog{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			pool.Close()
		})
	}
	t.Cleanup(stop)
	return stop, d
}

// settled waits until the project has n rows and none is pending, and
// returns them (the deliverers' commits are what it waits for; it reads
// every 20 ms for at most 3 min: the feed's horizon is cluster-wide, and
// parallel tests' CREATE DATABASE clones on the shared test server hold it
// back on a loaded machine).
func (f *fixture) settled(t *testing.T, n int) []notifykit.Delivery {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ds, err := f.config.ListDeliveries(context.Background(), f.ProjectID, notifykit.DeliveryFilter{Limit: notifykit.MaxPage})
		if err != nil {
			t.Fatal(err)
		}
		pending := 0
		for _, d := range ds {
			if d.Status == notifykit.StatusPending {
				pending++
			}
		}
		if len(ds) >= n && pending == 0 {
			return ds
		}
		if time.Now().After(deadline) {
			f.logOpenTransactions(t)
			t.Fatalf("after 3 min: %d rows (want %d), %d pending: %+v", len(ds), n, pending, ds)
		}
		<-tick.C
	}
}

// logOpenTransactions logs the server's transactions that hold an xid or
// an xmin (what holds the feed's horizon back), the feed's consumer row and
// the feed's newest events, when settled gives up.
func (f *fixture) logOpenTransactions(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rows, err := f.SU.Query(ctx, `SELECT pid, datname, coalesce(state, ''), coalesce(backend_xid::text, ''), coalesce(backend_xmin::text, ''),
		coalesce(extract(epoch FROM now() - xact_start)::int, -1), left(coalesce(query, ''), 160)
		FROM pg_stat_activity WHERE backend_xid IS NOT NULL OR backend_xmin IS NOT NULL ORDER BY xact_start`)
	if err != nil {
		t.Logf("pg_stat_activity: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid, age int
		var db, state, xid, xmin, query string
		if err := rows.Scan(&pid, &db, &state, &xid, &xmin, &age, &query); err != nil {
			t.Logf("pg_stat_activity: %v", err)
			return
		}
		t.Logf("open: pid %d db %s %s xid %s xmin %s for %d s: %s", pid, db, state, xid, xmin, age, query)
	}
	var horizon, cursor string
	_ = f.SU.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text`).Scan(&horizon)
	_ = f.SU.QueryRow(ctx, `SELECT coalesce(string_agg(consumer || ' ' || cursor_xid::text || '/' || cursor_id || ' ' || coalesce(claim_owner, '-'), '; '), '')
		FROM ql3.run_event_consumers`).Scan(&cursor)
	var maxXid string
	var events int
	_ = f.SU.QueryRow(ctx, `SELECT coalesce(max(feed_xid)::text, ''), count(*) FROM ql3.run_events`).Scan(&maxXid, &events)
	t.Logf("feed horizon %s; consumers %s; %d events, newest xid %s", horizon, cursor, events, maxXid)
	var order string
	_ = f.SU.QueryRow(ctx, `SELECT coalesce(string_agg(feed_id || '@' || feed_xid::text || '/' || xmin::text, ' ' ORDER BY feed_id), '') FROM ql3.run_events`).Scan(&order)
	t.Logf("events id@feed_xid/xmin: %s", order)
}

// tlog writes a replica's log lines into the test's log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// accepted is how often key was answered 200.
func (r *receiver) accepted(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok[key]
}

var _ controlplane.NotifyTester = (*notifyd.Deliverer)(nil)
