package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
)

// notifyFor wires the notification routes of a fixture.
func notifyFor(t testing.TB, store *sqlite.Store, clk *clock.Fake) *NotifyConfig {
	t.Helper()
	d, err := notify.New(notify.Config{Store: store, Feed: store, Runs: store, Clock: clk, Jitter: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := notify.NewTokens()
	if err != nil {
		t.Fatal(err)
	}
	return &NotifyConfig{Store: store, Deliverer: d, Tokens: tokens}
}

type fakeHook struct {
	mu     sync.Mutex
	bodies []string
}

func (h *fakeHook) server(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (h *fakeHook) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

func TestNotifyChannelsNeverAnswerCredentials(t *testing.T) {
	f := newFixture(t)
	hook := &fakeHook{}
	ts := hook.server(t)
	secrets := []string{"/path-SECRET-1", "signing-SECRET-2", "header-SECRET-3", "proxyuser:proxy-SECRET-4"}
	var ch NotifyChannel
	f.decode("POST", "/api/v1/notify/channels", fmt.Sprintf(`{"name":"ops hook","settings":{"kind":"webhook","server":"%s%s",
		"secret":"%s","headers":[{"name":"X-Auth","value":"%s"}]}}`, ts.URL, secrets[0], secrets[1], secrets[2]), http.StatusCreated, &ch)
	if ch.Settings.Server != ts.URL || strings.Join(ch.Settings.SecretsSet, ",") != "secret,server" || ch.Settings.HeaderNames[0] != "X-Auth" {
		t.Fatalf("public view %+v", ch.Settings)
	}
	var tg NotifyChannel
	f.decode("POST", "/api/v1/notify/channels", `{"name":"tg","settings":{"kind":"telegram","token":"123:tg-SECRET-5","chatId":"1",
		"proxy":"http://`+secrets[3]+`@proxy.example:3128"}}`, http.StatusCreated, &tg)
	if tg.Settings.Proxy != "http://proxy.example:3128" {
		t.Fatalf("proxy shown as %q", tg.Settings.Proxy)
	}
	// A patch without credentials keeps them: the test send still signs.
	f.decode("PATCH", "/api/v1/notify/channels/"+ch.ID, `{"name":"ops","settings":{"kind":"webhook"}}`, http.StatusOK, &ch)
	var d NotifyDelivery
	f.decode("POST", "/api/v1/notify/channels/"+ch.ID+"/test", "", http.StatusOK, &d)
	if d.Status != notify.StatusDelivered || len(d.Log) != 1 || d.Log[0].StatusCode != 200 {
		t.Fatalf("test send %+v", d)
	}
	if got := hook.all(); len(got) != 1 || !strings.Contains(got[0], "test notification") {
		t.Fatalf("receiver got %q", got)
	}
	// socks5 is refused with a clear error.
	r := f.call("PATCH", "/api/v1/notify/channels/"+tg.ID, `{"settings":{"kind":"telegram","chatId":"1","proxy":"socks5://127.0.0.1:1080"}}`)
	if r.status != 400 || !strings.Contains(string(r.body), "socks5 proxies are not supported") || r.errBody(t).Field != "settings.proxy" {
		t.Fatalf("socks5: %d %s", r.status, r.body)
	}
	// Unknown fields are refused.
	if r := f.call("POST", "/api/v1/notify/channels", `{"name":"x","settings":{"kind":"bark","token":"t","colour":"red"}}`); r.status != 400 {
		t.Fatalf("unknown field: %d %s", r.status, r.body)
	}
	var rule NotifyRule
	f.decode("POST", "/api/v1/notify/rules", `{"name":"failures","channels":["`+ch.ID+`"],"coalesce":{"max":3,"windowMs":60000},
		"quiet":{"zone":"Asia/Shanghai","start":"23:00","end":"07:00"}}`, http.StatusCreated, &rule)
	if strings.Join(rule.Kinds, ",") != "failed,lost,timed_out" || rule.Quiet.Mode != "hold" {
		t.Fatalf("rule %+v", rule)
	}
	if r := f.call("DELETE", "/api/v1/notify/channels/"+ch.ID, ""); r.status != 409 {
		t.Fatalf("deleting a channel a rule uses: %d", r.status)
	}
	if r := f.call("GET", "/api/v1/notify/deliveries?status=bogus", ""); r.status != 400 {
		t.Fatalf("bad status filter: %d", r.status)
	}
	for _, path := range []string{"/api/v1/notify/channels", "/api/v1/notify/channels/" + ch.ID, "/api/v1/notify/channels/" + tg.ID,
		"/api/v1/notify/rules", "/api/v1/notify/deliveries", "/api/v1/audit"} {
		r := f.call("GET", path, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		for _, s := range append(secrets, "tg-SECRET-5", "proxy-SECRET-4") {
			if strings.Contains(string(r.body), s) {
				t.Errorf("GET %s answered the credential %q", path, s)
			}
		}
	}
	var audit AuditList
	f.decode("GET", "/api/v1/audit", "", http.StatusOK, &audit)
	actions := map[string]int{}
	for _, a := range audit.Items {
		actions[a.Action]++
	}
	for _, want := range []string{notify.AuditChannelCreate, notify.AuditChannelUpdate, notify.AuditChannelTest, notify.AuditRuleCreate} {
		if actions[want] == 0 {
			t.Errorf("no audit line %s in %v", want, actions)
		}
	}
}

// The sendNotify endpoint takes a Run's token, only while that Run is
// active, and never another Run's.
func TestSendNotifyTokenIsPerActiveRun(t *testing.T) {
	f := newFixture(t)
	hook := &fakeHook{}
	ts := hook.server(t)
	var ch NotifyChannel
	f.decode("POST", "/api/v1/notify/channels", `{"name":"hook","settings":{"kind":"webhook","server":"`+ts.URL+`"}}`, http.StatusCreated, &ch)
	f.decode("POST", "/api/v1/notify/rules", `{"name":"scripts","kinds":["script"],"channels":["`+ch.ID+`"]}`, http.StatusCreated, nil)
	task := f.createHello()
	ctx := context.Background()
	start := func() edge.Run {
		r, _, err := f.store.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID})
		if err != nil {
			t.Fatal(err)
		}
		c, err := f.store.ClaimRun(ctx, r.ID, r.Version, f.clock.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.MarkAttemptRunning(ctx, edge.AttemptRef{RunID: r.ID, Number: 1}, edge.AttemptStart{PID: 1, PGID: 1, StartedAtMs: f.clock.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
		return c.Run
	}
	a, b := start(), start()
	tokA, tokB := f.notify.Tokens.Issue(a.ID), f.notify.Tokens.Issue(b.ID)
	send := func(tok string) response {
		return f.send("POST", notify.SendPath, `{"title":"t","content":"c"}`, "Authorization", "Bearer "+tok, "Content-Type", "application/json")
	}
	if r := send(tokA); r.status != http.StatusAccepted || !strings.Contains(string(r.body), `"queued":1`) {
		t.Fatalf("run A's token: %d %s", r.status, r.body)
	}
	// Another Run's id under A's MAC, the admin token, and nothing are refused.
	forged := "ql3n_" + b.ID + tokA[strings.LastIndexByte(tokA, '_'):]
	for _, tok := range []string{forged, f.token, ""} {
		if r := send(tok); r.status != 401 {
			t.Fatalf("token %.12q…: %d %s", tok, r.status, r.body)
		}
	}
	if _, err := f.store.FinishAttempt(ctx, edge.AttemptRef{RunID: a.ID, Number: 1}, edge.AttemptResult{Status: run.AttemptSucceeded,
		FinishedAtMs: f.clock.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if r := send(tokA); r.status != 401 || !strings.Contains(string(r.body), "not active") {
		t.Fatalf("after run A ended: %d %s", r.status, r.body)
	}
	if r := send(tokB); r.status != http.StatusAccepted {
		t.Fatalf("run B's token while it runs: %d %s", r.status, r.body)
	}
	// Oversized content is refused with the field named.
	big := fmt.Sprintf(`{"title":"t","content":"%s"}`, strings.Repeat("x", 17<<10))
	r := f.send("POST", notify.SendPath, big, "Authorization", "Bearer "+tokB, "Content-Type", "application/json")
	if r.status != 413 && r.status != 400 {
		t.Fatalf("oversized: %d %s", r.status, r.body)
	}
	if err := f.notify.Deliverer.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := hook.all(); len(got) != 2 {
		t.Fatalf("receiver got %d messages, want 2 (A then B)", len(got))
	}
	// Rate limit per Run.
	var last response
	for range notify.ScriptCallsPerWindow + 1 {
		last = send(tokB)
	}
	if last.status != 503 || !strings.Contains(string(last.body), "rate limited") {
		t.Fatalf("call %d of a minute: %d %s", notify.ScriptCallsPerWindow+2, last.status, last.body)
	}
}

// notifyExamples exercises every notification route for the OpenAPI
// example check.
func (f *fixture) notifyExamples() {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer ts.Close()
	var ch NotifyChannel
	f.decode("POST", "/api/v1/notify/channels", `{"name":"ex","settings":{"kind":"webhook","server":"`+ts.URL+`","secret":"s"}}`, http.StatusCreated, &ch)
	f.call("POST", "/api/v1/notify/channels", `{"name":"ex","settings":{"kind":"webhook","server":"`+ts.URL+`"}}`) // name in use
	f.call("POST", "/api/v1/notify/channels", `{"name":"bad","settings":{"kind":"telegram"}}`)
	f.call("GET", "/api/v1/notify/channels", "")
	f.call("GET", "/api/v1/notify/channels/"+ch.ID, "")
	f.call("GET", "/api/v1/notify/channels/nope", "")
	f.call("PATCH", "/api/v1/notify/channels/"+ch.ID, `{"enabled":false}`)
	f.call("POST", "/api/v1/notify/channels/"+ch.ID+"/test", "")
	var rule NotifyRule
	f.decode("POST", "/api/v1/notify/rules", `{"name":"r","kinds":["failed","script"],"channels":["`+ch.ID+`"]}`, http.StatusCreated, &rule)
	f.call("POST", "/api/v1/notify/rules", `{"name":"r2","kinds":["nope"],"channels":["`+ch.ID+`"]}`)
	f.call("GET", "/api/v1/notify/rules", "")
	f.call("GET", "/api/v1/notify/rules/"+rule.ID, "")
	f.call("PUT", "/api/v1/notify/rules/"+rule.ID, `{"name":"r","kinds":["failed"],"channels":["`+ch.ID+`"],"enabled":false}`)
	f.call("DELETE", "/api/v1/notify/channels/"+ch.ID, "") // used by a rule
	f.call("GET", "/api/v1/notify/deliveries?limit=10", "")
	f.call("GET", "/api/v1/notify/deliveries/1", "")
	f.call("GET", "/api/v1/notify/deliveries/99999", "")
	f.send("POST", notify.SendPath, `{"title":"t","content":"c"}`, "Content-Type", "application/json")
	f.call("DELETE", "/api/v1/notify/rules/"+rule.ID, "")
	f.call("DELETE", "/api/v1/notify/channels/"+ch.ID, "")
}
