package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/sqlite"
)

// The contract test of the QingLong-compatible Open API. Requests are
// shaped as QingLong's own clients send them (whyour/qinglong v2.21.0):
//
//   - token: GET /open/auth/token?client_id=&client_secret= (back/api/open.ts,
//     answered by back/services/open.ts authToken)
//   - envs: src/pages/env/index.tsx (GET envs?searchValue=, PUT envs/enable
//     and envs/disable with [id], DELETE envs with [id], PUT envs/{id}/move
//     with {fromIndex, toIndex}); src/pages/env/modal.tsx (POST envs with
//     [{value, name, remarks, labels: []}], PUT envs with {name, value,
//     remarks, labels, id})
//   - crons: src/pages/crontab/index.tsx (GET crons?searchValue=&page=&size=
//     &filters={}, PUT crons/run, crons/stop, crons/enable, crons/disable
//     with [id], DELETE crons with [id]); src/pages/crontab/modal.tsx (POST
//     and PUT crons with {name, command, schedule, labels, …, id});
//     src/pages/crontab/logModal.tsx (GET crons/{id}/log → data, logStatus)
//
// Answers are QingLong's envelope {code, data, message}; auth failures
// QingLong's 401 {code: 401, message} (back/loaders/express.ts).

type qlAnswer struct {
	Code      int             `json:"code"`
	Data      json.RawMessage `json:"data"`
	Message   string          `json:"message"`
	LogStatus string          `json:"logStatus"`
}

func (f *fixture) ql(method, path, token, body string) (int, qlAnswer) {
	f.t.Helper()
	hdr := []string{}
	if token != "" {
		hdr = append(hdr, "Authorization", "Bearer "+token)
	}
	r := f.send(method, path, body, hdr...)
	var a qlAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		f.t.Fatalf("%s %s: not QingLong's envelope: %q", method, path, r.body)
	}
	if a.Code != r.status && !(r.status == 200 && a.Code == 400 && strings.HasPrefix(path, "/open/auth/token")) {
		f.t.Fatalf("%s %s: envelope code %d differs from HTTP %d", method, path, a.Code, r.status)
	}
	return r.status, a
}

// newApp creates an app through the native API and returns its client id
// and secret.
func (f *fixture) newApp(name string, scopes ...string) (string, string) {
	f.t.Helper()
	sc, _ := json.Marshal(scopes)
	var app CreatedApp
	f.decode("POST", "/api/v1/apps", `{"name":"`+name+`","scopes":`+string(sc)+`}`, http.StatusCreated, &app)
	if len(app.ClientID) != 12 || len(app.ClientSecret) != 24 {
		f.t.Fatalf("app credentials %+v", app)
	}
	return app.ClientID, app.ClientSecret
}

func (f *fixture) appToken(id, secret string) OpenToken {
	f.t.Helper()
	st, a := f.ql("GET", "/open/auth/token?client_id="+url.QueryEscape(id)+"&client_secret="+url.QueryEscape(secret), "", "")
	if st != 200 || a.Code != 200 {
		f.t.Fatalf("token: %d %+v", st, a)
	}
	var tok OpenToken
	if err := json.Unmarshal(a.Data, &tok); err != nil {
		f.t.Fatal(err)
	}
	return tok
}

func decodeData[T any](t *testing.T, a qlAnswer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.Data, &v); err != nil {
		t.Fatalf("data %s: %v", a.Data, err)
	}
	return v
}

func TestOpenAPIContractEnvs(t *testing.T) {
	f := newFixture(t)
	id, secret := f.newApp("refresher", "envs")
	tok := f.appToken(id, secret)
	if tok.TokenType != "Bearer" || len(tok.Token) < 32 || tok.Expiration != fixtureStart.Add(30*24*time.Hour).Unix() {
		t.Fatalf("token data %+v", tok)
	}
	// The raw data object has exactly QingLong's keys.
	_, raw := f.ql("GET", "/open/auth/token?client_id="+id+"&client_secret="+secret, "", "")
	var keys map[string]any
	_ = json.Unmarshal(raw.Data, &keys)
	if len(keys) != 3 || keys["token"] == nil || keys["token_type"] != "Bearer" || keys["expiration"] == nil {
		t.Fatalf("token data keys %v", keys)
	}

	// modal.tsx: a create is an array of {value, name, remarks, labels}.
	st, a := f.ql("POST", "/open/envs", tok.Token, `[{"value":"pt_key=a;pt_pin=x;","name":"JD_COOKIE","remarks":"phone","labels":[]},
		{"value":"pt_key=b;pt_pin=y;","name":"JD_COOKIE","remarks":"","labels":[]}]`)
	if st != 200 {
		t.Fatalf("create: %d %+v", st, a)
	}
	created := decodeData[[]OpenEnv](t, a)
	if len(created) != 2 || created[0].ID == 0 || created[0].ID == created[1].ID || created[0].Status != 0 || *created[0].Value != "pt_key=a;pt_pin=x;" {
		t.Fatalf("created %+v", created)
	}
	// index.tsx: list with searchValue (matches values too), values included.
	st, a = f.ql("GET", "/open/envs?searchValue=pt_pin=y", tok.Token, "")
	list := decodeData[[]OpenEnv](t, a)
	if st != 200 || len(list) != 1 || list[0].ID != created[1].ID || list[0].Value == nil || *list[0].Value != "pt_key=b;pt_pin=y;" {
		t.Fatalf("search: %d %s", st, a.Data)
	}
	var row map[string]any
	var rows []map[string]any
	_ = json.Unmarshal(a.Data, &rows)
	row = rows[0]
	for _, k := range []string{"id", "name", "value", "remarks", "status", "position", "isPinned", "labels", "timestamp", "createdAt", "updatedAt"} {
		if _, ok := row[k]; !ok {
			t.Errorf("env row lacks QingLong's %q: %v", k, row)
		}
	}
	// Every read of values is audited: one line naming the app and the entry.
	lines, err := f.store.ListAudit(t.Context(), 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	last := lines[len(lines)-1]
	if last.Action != sqlite.AuditOpenEnvRead || last.Actor != "app refresher" || strings.Count(last.Detail, ",") != 0 || last.Detail == "" {
		t.Fatalf("audit line %+v", last)
	}
	// modal.tsx: an update is {name, value, remarks, labels, id}.
	body := fmt.Sprintf(`{"name":"JD_COOKIE","value":"pt_key=new;pt_pin=x;","remarks":"phone","labels":[],"id":%d}`, created[0].ID)
	if st, a = f.ql("PUT", "/open/envs", tok.Token, body); st != 200 || *decodeData[OpenEnv](t, a).Value != "pt_key=new;pt_pin=x;" {
		t.Fatalf("update: %d %+v", st, a)
	}
	// index.tsx: disable and enable take [id].
	if st, a = f.ql("PUT", "/open/envs/disable", tok.Token, fmt.Sprintf("[%d]", created[0].ID)); st != 200 || a.Code != 200 {
		t.Fatalf("disable: %d %+v", st, a)
	}
	_, a = f.ql("GET", "/open/envs/"+fmt.Sprint(created[0].ID), tok.Token, "")
	if e := decodeData[OpenEnv](t, a); e.Status != 1 {
		t.Fatalf("status after disable: %+v", e)
	}
	if st, _ = f.ql("PUT", "/open/envs/enable", tok.Token, fmt.Sprintf("[%d]", created[0].ID)); st != 200 {
		t.Fatal("enable")
	}
	// index.tsx: drag the second row (index 1) to the top (index 0).
	st, a = f.ql("PUT", fmt.Sprintf("/open/envs/%d/move", created[1].ID), tok.Token, `{"fromIndex":1,"toIndex":0}`)
	if st != 200 {
		t.Fatalf("move: %d %+v", st, a)
	}
	_, a = f.ql("GET", "/open/envs", tok.Token, "")
	if l := decodeData[[]OpenEnv](t, a); len(l) != 2 || l[0].ID != created[1].ID {
		t.Fatalf("order after move: %s", a.Data)
	}
	// What cannot be expressed or does not exist is refused with code 400.
	if st, a = f.ql("PUT", "/open/envs/enable", tok.Token, "[999999]"); st != 400 || a.Message == "" {
		t.Fatalf("unknown id: %d %+v", st, a)
	}
	if st, a = f.ql("POST", "/open/envs", tok.Token, `[]`); st != 400 {
		t.Fatalf("empty create: %d %+v", st, a)
	}
	// index.tsx: DELETE envs with [id].
	if st, _ = f.ql("DELETE", "/open/envs", tok.Token, fmt.Sprintf("[%d,%d]", created[0].ID, created[1].ID)); st != 200 {
		t.Fatal("delete")
	}
	if _, a = f.ql("GET", "/open/envs", tok.Token, ""); string(a.Data) != "[]" {
		t.Fatalf("after delete: %s", a.Data)
	}
}

func TestOpenAPIAuthShapes(t *testing.T) {
	f := newFixture(t)
	id, secret := f.newApp("crons-only", "crons")
	tok := f.appToken(id, secret)
	// A token without the envs scope: QingLong's 401 shape.
	st, a := f.ql("GET", "/open/envs", tok.Token, "")
	if st != 401 || a.Code != 401 || a.Message == "" || a.Data != nil {
		t.Fatalf("no envs scope: %d %+v", st, a)
	}
	if st, a = f.ql("GET", "/open/envs", "", ""); st != 401 || a.Code != 401 {
		t.Fatalf("no token: %d %+v", st, a)
	}
	if st, a = f.ql("GET", "/open/crons", "nonsense", ""); st != 401 || a.Code != 401 {
		t.Fatalf("unknown token: %d %+v", st, a)
	}
	// The admin token is not an app token.
	if st, _ = f.ql("GET", "/open/crons", f.token, ""); st != 401 {
		t.Fatalf("admin token on /open: %d", st)
	}
	// Expiry: 30 days (injected clock).
	if st, _ = f.ql("GET", "/open/crons", tok.Token, ""); st != 200 {
		t.Fatal("fresh token refused")
	}
	f.clock.Advance(30*24*time.Hour + time.Second)
	if st, a = f.ql("GET", "/open/crons", tok.Token, ""); st != 401 || a.Code != 401 {
		t.Fatalf("expired token: %d %+v", st, a)
	}
	// Routes ql3-edge does not serve: QingLong's 404 shape, after auth.
	tok = f.appToken(id, secret)
	if st, a = f.ql("GET", "/open/scripts", tok.Token, ""); st != 401 {
		t.Fatalf("scripts without scope: %d %+v", st, a)
	}
	id2, secret2 := f.newApp("all", "envs", "crons", "scripts", "logs", "system")
	all := f.appToken(id2, secret2)
	for _, p := range []string{"/open/crons/views", "/open/envs/views", "/open/system/config"} {
		if st, a = f.ql("PUT", p, all.Token, "{}"); st != 404 || a.Code != 404 || !strings.Contains(a.Message, "does not serve") {
			t.Fatalf("%s: %d %+v", p, st, a)
		}
	}
}

func TestOpenAPITokenRouteRateLimit(t *testing.T) {
	f := newFixture(t)
	id, secret := f.newApp("bot", "envs")
	// A wrong secret: HTTP 200 with code 400, as QingLong answers.
	for i := range openTokenMax {
		st, a := f.ql("GET", "/open/auth/token?client_id="+id+"&client_secret=wrong", "", "")
		if st != 200 || a.Code != 400 || a.Message == "" {
			t.Fatalf("failure %d: %d %+v", i, st, a)
		}
	}
	r := f.send("GET", "/open/auth/token?client_id="+id+"&client_secret="+secret, "")
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), `"code":429`) || r.header.Get("Retry-After") == "" {
		t.Fatalf("over the limit: %d %s", r.status, r.body)
	}
	f.clock.Advance(openTokenWindow)
	f.appToken(id, secret) // the window passed: the right secret works
}

func TestOpenAPIContractCrons(t *testing.T) {
	f := newFixture(t)
	id, secret := f.newApp("bot", "crons")
	tok := f.appToken(id, secret).Token
	// modal.tsx: create {name, command, schedule, labels}.
	st, a := f.ql("POST", "/open/crons", tok, `{"name":"京东签到","command":"task jd_sign.js","schedule":"0 8 * * *","labels":[]}`)
	if st != 200 {
		t.Fatalf("create: %d %+v", st, a)
	}
	c := decodeData[OpenCron](t, a)
	if c.ID == 0 || c.Name != "京东签到" || c.Command != "task jd_sign.js" || c.Schedule != "0 8 * * *" || c.IsDisabled != 0 || c.Status != 1 {
		t.Fatalf("created %+v", c)
	}
	task, err := f.store.GetTaskByName(t.Context(), "京东签到")
	if err != nil || task.Spec.Shell == nil || task.Spec.Shell.Shell != "/bin/bash" || task.Spec.Shell.Command != "task jd_sign.js" {
		t.Fatalf("ql3 task %+v %v", task.Spec, err)
	}
	var row map[string]any
	_ = json.Unmarshal(a.Data, &row)
	for _, k := range []string{"id", "name", "command", "schedule", "status", "isDisabled", "isPinned", "labels", "last_running_time",
		"last_execution_time", "extra_schedules", "createdAt", "updatedAt"} {
		if _, ok := row[k]; !ok {
			t.Errorf("cron row lacks QingLong's %q", k)
		}
	}
	// index.tsx: the list with paging and an empty filter.
	f.ql("POST", "/open/crons", tok, `{"name":"other","command":"echo hi","schedule":"*/5 * * * *"}`)
	st, a = f.ql("GET", "/open/crons?searchValue=jd_sign&page=1&size=20&filters={}", tok, "")
	page := decodeData[OpenCronPage](t, a)
	if st != 200 || page.Total != 1 || len(page.Data) != 1 || page.Data[0].ID != c.ID {
		t.Fatalf("search: %d %s", st, a.Data)
	}
	if _, a = f.ql("GET", "/open/crons?page=2&size=1", tok, ""); decodeData[OpenCronPage](t, a).Total != 2 || len(decodeData[OpenCronPage](t, a).Data) != 1 {
		t.Fatalf("page 2: %s", a.Data)
	}
	// PUT with id, extra schedules become extra triggers.
	body := fmt.Sprintf(`{"name":"京东签到","command":"task jd_sign.js now","schedule":"0 9 * * *","extra_schedules":[{"schedule":"0 21 * * *"}],"labels":[],"id":%d}`, c.ID)
	st, a = f.ql("PUT", "/open/crons", tok, body)
	u := decodeData[OpenCron](t, a)
	if st != 200 || u.Schedule != "0 9 * * *" || len(u.ExtraSchedules) != 1 || u.ExtraSchedules[0].Schedule != "0 21 * * *" || u.Command != "task jd_sign.js now" {
		t.Fatalf("update: %d %s", st, a.Data)
	}
	// What a ql3 task cannot express is refused, never dropped.
	for _, b := range []string{
		`{"command":"x","schedule":"@once"}`,
		`{"command":"x","schedule":"0 8 * * *","task_before":"echo pre"}`,
		`{"command":"x","schedule":"0 8 * * *","labels":["daily"]}`,
		`{"command":"x","schedule":"0 8 * * *","colour":"red"}`,
	} {
		if st, a = f.ql("POST", "/open/crons", tok, b); st != 400 || a.Message == "" {
			t.Errorf("%s: %d %+v", b, st, a)
		}
	}
	if st, a = f.ql("GET", "/open/crons?filters={\"status\":[0]}", tok, ""); st != 400 {
		t.Errorf("a filter was ignored: %d %+v", st, a)
	}
	// index.tsx: run, then the log; disable, enable, stop, delete take [id].
	ids := fmt.Sprintf("[%d]", c.ID)
	if st, _ = f.ql("PUT", "/open/crons/run", tok, ids); st != 200 {
		t.Fatal("run")
	}
	_, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, "")
	if got := decodeData[OpenCron](t, a); got.Status != 3 || got.LastExecutionTime != fixtureStart.Unix() {
		t.Fatalf("after run: %+v", got)
	}
	if st, a = f.ql("GET", fmt.Sprintf("/open/crons/%d/log", c.ID), tok, ""); st != 200 || a.LogStatus != "running" {
		t.Fatalf("log: %d %+v", st, a)
	}
	if st, _ = f.ql("PUT", "/open/crons/stop", tok, ids); st != 200 {
		t.Fatal("stop")
	}
	if st, a = f.ql("GET", fmt.Sprintf("/open/crons/%d/log", c.ID), tok, ""); st != 200 || a.LogStatus != "completed" {
		t.Fatalf("log after stop: %d %+v", st, a)
	}
	if st, _ = f.ql("PUT", "/open/crons/disable", tok, ids); st != 200 {
		t.Fatal("disable")
	}
	_, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, "")
	if decodeData[OpenCron](t, a).IsDisabled != 1 {
		t.Fatalf("isDisabled: %s", a.Data)
	}
	f.ql("PUT", "/open/crons/enable", tok, ids)
	if st, _ = f.ql("DELETE", "/open/crons", tok, ids); st != 200 {
		t.Fatal("delete")
	}
	if st, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, ""); st != 400 {
		t.Fatalf("deleted cron: %d %+v", st, a)
	}
}
