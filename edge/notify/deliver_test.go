package notify_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge/notify"
)

// receiver is a webhook endpoint answering codes in turn (the last one
// repeats) and recording every request.
func receiver(t *testing.T, codes ...int) (*httptest.Server, *hits) {
	h := &hits{}
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.add(got{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		i := int(n.Add(1)) - 1
		w.WriteHeader(codes[min(i, len(codes)-1)])
	}))
	t.Cleanup(ts.Close)
	return ts, h
}

func webhookRule(e *env, ts *httptest.Server, r cn.Rule) (notify.Channel, notify.Rule) {
	ch := e.channel("hook", channel.Settings{Kind: channel.Webhook, Server: ts.URL + "/hook", Secret: "s3cret-signing"})
	r.Channels = []string{ch.ID}
	return ch, e.rule("failures", notify.RuleInput{Rule: r})
}

func TestThreeFailuresThreeDeliveriesWithDistinctKeys(t *testing.T) {
	e := newEnv(t)
	ts, h := receiver(t, 200)
	webhookRule(e, ts, cn.Rule{})
	for range 3 {
		e.finish(run.AttemptFailed)
	}
	e.step()
	ds := e.deliveries(notify.DeliveryFilter{})
	if len(ds) != 3 {
		t.Fatalf("%d deliveries, want 3", len(ds))
	}
	keys := map[string]bool{}
	for _, d := range ds {
		if d.Status != notify.StatusDelivered || d.Attempts != 1 || d.LastStatus != 200 {
			t.Errorf("delivery %+v", d)
		}
		keys[d.Key] = true
	}
	wire := map[string]bool{}
	for _, g := range h.all() {
		wire[g.Header["Idempotency-Key"][0]] = true
	}
	if len(keys) != 3 || len(wire) != 3 {
		t.Fatalf("keys %v, on the wire %v: want 3 distinct", keys, wire)
	}
	for k := range keys {
		if !wire[k] {
			t.Errorf("key %s never reached the receiver", k)
		}
	}
	// Stepping again sends nothing more: the cursor moved with the rows.
	e.step()
	if n := len(h.all()); n != 3 {
		t.Fatalf("receiver got %d requests after a second step, want 3", n)
	}
}

func TestRetriesUntilAccepted(t *testing.T) {
	e := newEnv(t)
	ts, h := receiver(t, 500, 500, 200)
	webhookRule(e, ts, cn.Rule{})
	e.finish(run.AttemptFailed)
	e.step() // 500
	d := e.deliveries(notify.DeliveryFilter{})[0]
	if d.Status != notify.StatusPending || d.Attempts != 1 || d.LastStatus != 500 {
		t.Fatalf("after a 500: %+v", d)
	}
	// Backoff with jitter 0: 1 s after the first failure, 2 s after the second.
	if want := start.UnixMilli() + 1000; d.NextAtMs != want {
		t.Fatalf("next attempt at %d, want %d", d.NextAtMs, want)
	}
	e.clk.Advance(999 * time.Millisecond)
	e.step()
	if n := len(h.all()); n != 1 {
		t.Fatalf("retried before the backoff: %d requests", n)
	}
	e.clk.Advance(time.Millisecond)
	e.step() // 500
	e.clk.Advance(2 * time.Second)
	e.step() // 200
	d = e.deliveries(notify.DeliveryFilter{})[0]
	if d.Status != notify.StatusDelivered || d.Attempts != 3 {
		t.Fatalf("after 500, 500, 200: %+v", d)
	}
	var codes []int
	for _, a := range d.AttemptLog {
		codes = append(codes, a.StatusCode)
	}
	if len(codes) != 3 || codes[0] != 500 || codes[1] != 500 || codes[2] != 200 || !strings.Contains(d.AttemptLog[0].Error, "HTTP 500") {
		t.Fatalf("attempt log %+v", d.AttemptLog)
	}
	if ok := e.deliveries(notify.DeliveryFilter{Status: notify.StatusDelivered}); len(ok) != 1 {
		t.Fatalf("%d successes recorded, want exactly 1", len(ok))
	}
	for _, g := range h.all() {
		if g.Header["Idempotency-Key"][0] != d.Key {
			t.Fatalf("a retry changed the idempotency key: %v", g.Header["Idempotency-Key"])
		}
	}
}

func TestGivesUpWithTheReason(t *testing.T) {
	e := newEnv(t)
	ts, _ := receiver(t, 200)
	webhookRule(e, ts, cn.Rule{})
	ts.Close() // the receiver is down for good
	e.finish(run.AttemptFailed)
	for i := 0; i < 100; i++ {
		e.step()
		d := e.deliveries(notify.DeliveryFilter{})[0]
		if d.Status == notify.StatusFailed {
			if !strings.Contains(d.LastError, "gave up after") || !strings.Contains(d.LastError, "connection refused") {
				t.Fatalf("reason %q", d.LastError)
			}
			if d.FinishedAtMs > d.GiveUpAtMs || d.Attempts < 5 {
				t.Fatalf("gave up at %d (limit %d) after %d attempts", d.FinishedAtMs, d.GiveUpAtMs, d.Attempts)
			}
			return
		}
		e.clk.Set(time.UnixMilli(d.NextAtMs))
	}
	t.Fatal("never gave up")
}

func TestRestartMidDeliveryLosesNothing(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	h := &hits{}
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.add(got{Method: r.Method, Header: r.Header.Clone(), Body: body})
		arrived <- struct{}{}
		if n.Add(1) == 1 {
			<-release // the first attempt's answer never comes back
		}
	}))
	defer ts.Close()
	defer close(release)
	webhookRule(e, ts, cn.Rule{})
	e.finish(run.AttemptFailed)

	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- e.d.Step(ctx) }()
	<-arrived // the request is out; the process dies before its answer
	cancel()
	if err := <-done; err == nil {
		t.Fatal("step finished although its delivery was cut off")
	}
	e.store.Close()
	e.open() // a new process on the same data directory

	d := e.deliveries(notify.DeliveryFilter{})
	if len(d) != 1 || d[0].Status != notify.StatusPending {
		t.Fatalf("after the restart: %+v", d)
	}
	e.step()
	d = e.deliveries(notify.DeliveryFilter{})
	if d[0].Status != notify.StatusDelivered {
		t.Fatalf("not delivered after the restart: %+v", d[0])
	}
	all := h.all()
	if len(all) != 2 || all[0].Header["Idempotency-Key"][0] != all[1].Header["Idempotency-Key"][0] {
		t.Fatalf("want the same notification twice with one key (outcome unknown the first time), got %d", len(all))
	}
}

func TestQuietHoursAcrossDSTHoldUntilTheWindowEnds(t *testing.T) {
	e := newEnv(t)
	ts, h := receiver(t, 200)
	// New York springs forward on 2026-03-08 at 02:00 → 03:00; the window
	// 01:00–02:30 ends at 03:00 EDT (07:00 UTC) that night.
	webhookRule(e, ts, cn.Rule{Quiet: &cn.QuietHours{Zone: "America/New_York", Start: "01:00", End: "02:30", Mode: cn.QuietHold}})
	e.clk.Set(time.Date(2026, 3, 8, 6, 30, 0, 0, time.UTC)) // 01:30 EST
	e.finish(run.AttemptFailed)
	e.finish(run.AttemptFailed)
	e.step()
	held := e.deliveries(notify.DeliveryFilter{Status: notify.StatusHeld})
	if len(held) != 2 {
		t.Fatalf("%d held, want 2", len(held))
	}
	end := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	if held[0].NextAtMs != end.UnixMilli() {
		t.Fatalf("held until %s, want %s", time.UnixMilli(held[0].NextAtMs).UTC(), end)
	}
	e.clk.Set(end.Add(-time.Second))
	e.step()
	if n := len(h.all()); n != 0 {
		t.Fatalf("%d sent inside quiet hours", n)
	}
	e.clk.Set(end)
	e.step()
	all := h.all()
	if len(all) != 1 || !bytes.Contains(all[0].Body, []byte("2 notification(s) held during quiet hours")) {
		t.Fatalf("want one digest at the end of the window, got %d: %s", len(all), all)
	}
	if n := len(e.deliveries(notify.DeliveryFilter{Status: notify.StatusDigested})); n != 2 {
		t.Fatalf("%d rows marked digested, want 2", n)
	}
}

func TestCoalescingCapsAFlappingTask(t *testing.T) {
	e := newEnv(t)
	ts, h := receiver(t, 200)
	webhookRule(e, ts, cn.Rule{Coalesce: cn.Coalesce{Max: 2, WindowMs: 60_000}})
	for range 10 {
		e.finish(run.AttemptFailed)
		e.clk.Advance(time.Second)
	}
	e.step()
	if n := len(h.all()); n != 2 {
		t.Fatalf("%d sent in the window, want 2", n)
	}
	e.clk.Advance(time.Minute)
	e.step()
	all := h.all()
	if len(all) != 3 || !bytes.Contains(all[2].Body, []byte("8 more notification(s) held back")) {
		t.Fatalf("want the summary of 8 held back, got %d: %s", len(all), all[len(all)-1].Body)
	}
}

func TestNoCredentialInTheDatabaseOrTheLog(t *testing.T) {
	e := newEnv(t)
	var logBuf bytes.Buffer
	secrets := []string{"tg-bot-123456:SECRETtoken", "hook-signing-SECRET", "smtp-PASSWORD-secret", "/hook/SECRETpath"}
	ts, _ := receiver(t, 500)
	e.channel("tg", channel.Settings{Kind: channel.Telegram, Server: ts.URL, Token: secrets[0], ChatID: "42"})
	e.channel("hook2", channel.Settings{Kind: channel.Webhook, Server: ts.URL + secrets[3], Secret: secrets[1]})
	e.channel("mail", channel.Settings{Kind: channel.Email, SMTPHost: "127.0.0.1", SMTPPort: 1, From: "a@b.c", To: []string{"d@e.f"},
		Username: "u", Password: secrets[2]})
	chs, err := e.store.ListChannels(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, c := range chs {
		ids = append(ids, c.ID)
	}
	e.rule("all", notify.RuleInput{Rule: cn.Rule{Channels: ids}})
	d, err := notify.New(notify.Config{Store: e.store, Feed: e.store, Runs: e.store, Clock: e.clk,
		Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	e.finish(run.AttemptFailed)
	if err := d.Step(e.ctx); err != nil {
		t.Fatal(err)
	}
	ds := e.deliveries(notify.DeliveryFilter{})
	if len(ds) != 3 {
		t.Fatalf("%d deliveries", len(ds))
	}
	e.store.Close()
	var dump []byte
	for _, f := range []string{"ql3-edge.db", "ql3-edge.db-wal"} {
		b, err := os.ReadFile(filepath.Join(e.dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		dump = append(dump, b...)
	}
	if len(dump) == 0 || logBuf.Len() == 0 {
		t.Fatal("nothing to inspect")
	}
	for _, s := range secrets {
		if bytes.Contains(dump, []byte(s)) {
			t.Errorf("the database file holds %q in plaintext", s)
		}
		if strings.Contains(logBuf.String(), s) {
			t.Errorf("the log holds %q", s)
		}
		for _, dl := range ds {
			if strings.Contains(dl.LastError, s) {
				t.Errorf("a delivery error holds %q", s)
			}
		}
	}
}

func TestPruneKeepsWhatIsNotFinished(t *testing.T) {
	e := newEnv(t)
	ts, _ := receiver(t, 200)
	webhookRule(e, ts, cn.Rule{})
	e.finish(run.AttemptFailed)
	e.step()
	e.finish(run.AttemptFailed)
	if err := e.d.Step(e.ctx); err != nil { // both derived; the second one delivered too
		t.Fatal(err)
	}
	ts.Close()
	e.finish(run.AttemptFailed)
	e.step() // the third stays pending (receiver down)
	n, err := e.store.PruneDeliveries(e.ctx, e.clk.Now().UnixMilli()+1, 500)
	if err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want the 2 delivered", n, err)
	}
	if d := e.deliveries(notify.DeliveryFilter{}); len(d) != 1 || d[0].Status != notify.StatusPending {
		t.Fatalf("left %+v", d)
	}
}

// Two deliverers on one feed cursor: the outbox rows and the cursor move
// commit together under compare-and-set, so a second consumer that read
// the same events writes nothing twice (it gets a conflict, then finds
// the cursor moved on).
func TestTwoConsumersNeverDeriveTwice(t *testing.T) {
	e := newEnv(t)
	ts, h := receiver(t, 200)
	webhookRule(e, ts, cn.Rule{})
	e.finish(run.AttemptFailed)
	other := e.deliverer(&notify.Sender{})
	from, err := e.store.ConsumerPosition(e.ctx, notify.ConsumerName)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.store.Events(e.ctx, from, 100)
	if err != nil || len(evs) == 0 {
		t.Fatal(err)
	}
	e.step() // the first consumer derives and delivers
	// The second one read the same events before; its write must fail.
	row := notify.NewDelivery{Key: "dup", ChannelID: "x", Kind: "failed", Title: "t", Content: "c", Status: notify.StatusPending}
	if err := e.store.Enqueue(e.ctx, notify.ConsumerName, from, evs[len(evs)-1].Position, []notify.NewDelivery{row}, nil); err == nil {
		t.Fatal("a stale consumer moved the cursor")
	}
	if err := other.Step(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.deliveries(notify.DeliveryFilter{})); n != 1 || len(h.all()) != 1 {
		t.Fatalf("%d rows, %d sent: want 1 and 1", n, len(h.all()))
	}
}
