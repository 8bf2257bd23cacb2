package qlcompat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/openapps"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/qlcompat"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/qlopen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The contract test of QingLong's Open API on ql3-control. Requests are
// shaped as QingLong v2.21.0's own clients send them:
//
//   - token: GET /open/auth/token?client_id=&client_secret= (back/api/open.ts,
//     back/services/open.ts authToken)
//   - crons: src/pages/crontab/index.tsx (GET crons?searchValue=&page=&size=
//     &filters={}; PUT crons/run, crons/stop, crons/enable, crons/disable
//     and DELETE crons with [id]), src/pages/crontab/modal.tsx (POST and PUT
//     crons with {name, command, schedule, labels, …, id}),
//     src/pages/crontab/logModal.tsx (GET crons/{id}/log → data, logStatus)
//   - envs: src/pages/env/index.tsx (GET envs?searchValue=, PUT envs/enable
//     and envs/disable with [id], DELETE envs with [id], PUT envs/{id}/move
//     with {fromIndex, toIndex}); src/pages/env/modal.tsx (POST envs with
//     [{value, name, remarks, labels: []}], PUT envs with {name, value,
//     remarks, labels, id})
//
// Answers are QingLong's envelope {code, data, message}; auth failures
// its 401 {code: 401, message} (back/loaders/express.ts).

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	url   string
	admin string // admin API token
	clock *clock
}

type answer struct {
	Code      int             `json:"code"`
	Data      json.RawMessage `json:"data"`
	Message   string          `json:"message"`
	LogStatus string          `json:"logStatus"`
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := pgtest.NewDB(t)
	adminPool := db.Pool(t, postgres.RoleAdmin)
	pub := publication.NewPublisher(adminPool, publication.PublisherOptions{})
	_, token, err := pub.CreateAPIToken(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now().Truncate(time.Second)}
	runs := runops.NewRunOps(db.Pool(t, postgres.RoleRuntime))
	apps := openapps.New(adminPool)
	envs := envstore.New(adminPool)
	kek, err := envseal.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	if err := envs.UnlockEnv(context.Background(), kek, "/test/env.key"); err != nil {
		t.Fatal(err)
	}
	open := qlcompat.New(qlcompat.Config{Backend: pub, Runs: runs, Apps: apps, Envs: envs, Scripts: scriptstore.New(adminPool), Now: clk.Now, TimeZone: "Asia/Shanghai"})
	srv := httptest.NewServer(adminapi.New(adminapi.Config{Backend: pub, Runs: runs, Apps: apps, Open: open, Envs: envs}))
	t.Cleanup(srv.Close)
	return &fixture{t: t, url: srv.URL, admin: token, clock: clk}
}

func (f *fixture) do(method, path, token, body string) (int, []byte, http.Header) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// ql sends a QingLong request and holds the answer to the envelope.
func (f *fixture) ql(method, path, token, body string) (int, answer) {
	f.t.Helper()
	st, b, _ := f.do(method, path, token, body)
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		f.t.Fatalf("%s %s: not QingLong's envelope: %q", method, path, b)
	}
	if a.Code != st && !(st == 200 && a.Code == 400 && strings.HasPrefix(path, "/open/auth/token")) {
		f.t.Fatalf("%s %s: envelope code %d differs from HTTP %d", method, path, a.Code, st)
	}
	return st, a
}

func (f *fixture) project(name string) {
	f.t.Helper()
	if st, b, _ := f.do("POST", "/api/v1/projects", f.admin, `{"name":"`+name+`"}`); st != 201 {
		f.t.Fatalf("project: %d %s", st, b)
	}
}

func (f *fixture) app(project, name string, scopes ...string) (string, string) {
	f.t.Helper()
	sc, _ := json.Marshal(scopes)
	st, b, _ := f.do("POST", "/api/v1/apps", f.admin, `{"project":"`+project+`","name":"`+name+`","scopes":`+string(sc)+`}`)
	var app adminapi.CreatedApp
	if err := json.Unmarshal(b, &app); err != nil || st != 201 || len(app.ClientID) != 12 || len(app.ClientSecret) != 24 {
		f.t.Fatalf("app: %d %s", st, b)
	}
	return app.ClientID, app.ClientSecret
}

func (f *fixture) token(id, secret string) qlopen.Token {
	f.t.Helper()
	st, a := f.ql("GET", "/open/auth/token?client_id="+url.QueryEscape(id)+"&client_secret="+url.QueryEscape(secret), "", "")
	if st != 200 || a.Code != 200 {
		f.t.Fatalf("token: %d %+v", st, a)
	}
	return data[qlopen.Token](f.t, a)
}

func data[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.Data, &v); err != nil {
		t.Fatalf("data %s: %v", a.Data, err)
	}
	return v
}

func TestOpenAPIContractCronsOnTheControlPlane(t *testing.T) {
	f := newFixture(t)
	f.project("home")
	f.project("office")
	id, secret := f.app("home", "phone", "crons")
	tk := f.token(id, secret)
	if tk.TokenType != "Bearer" || len(tk.Token) < 32 || tk.Expiration != f.clock.Now().Add(30*24*time.Hour).Unix() {
		t.Fatalf("token %+v", tk)
	}
	tok := tk.Token

	// modal.tsx: create with QingLong's body.
	st, a := f.ql("POST", "/open/crons", tok, `{"name":"京东签到","command":"task jd_sign.js","schedule":"0 8 * * *","labels":[],"extra_schedules":[{"schedule":"0 20 * * *"}]}`)
	c := data[qlopen.Cron](t, a)
	if st != 200 || c.ID == 0 || c.Name != "京东签到" || c.Schedule != "0 8 * * *" || len(c.ExtraSchedules) != 1 || c.Status != 1 || c.IsDisabled != 0 {
		t.Fatalf("create: %d %s", st, a.Data)
	}
	var row map[string]any
	_ = json.Unmarshal(a.Data, &row)
	for _, k := range []string{"id", "name", "command", "schedule", "status", "isDisabled", "isPinned", "labels", "last_running_time",
		"last_execution_time", "extra_schedules", "createdAt", "updatedAt"} {
		if _, found := row[k]; !found {
			t.Errorf("cron row lacks QingLong's %q", k)
		}
	}
	// The cron is a task of the app's project.
	if st, b, _ := f.do("GET", "/api/v1/tasks?project=home", f.admin, ""); st != 200 || !strings.Contains(string(b), "京东签到") {
		t.Fatalf("native list: %d %s", st, b)
	}

	// index.tsx: the list with a search, paging and filters={}.
	f.ql("POST", "/open/crons", tok, `{"name":"other","command":"echo hi","schedule":"*/5 * * * *"}`)
	st, a = f.ql("GET", "/open/crons?searchValue=jd_sign&page=1&size=20&filters={}", tok, "")
	if page := data[qlopen.CronPage](t, a); st != 200 || page.Total != 1 || len(page.Data) != 1 || page.Data[0].ID != c.ID {
		t.Fatalf("search: %d %s", st, a.Data)
	}
	if _, a = f.ql("GET", "/open/crons?searchValue=签到", tok, ""); data[qlopen.CronPage](t, a).Total != 1 {
		t.Fatalf("chinese search: %s", a.Data)
	}
	if _, a = f.ql("GET", "/open/crons?page=2&size=1", tok, ""); data[qlopen.CronPage](t, a).Total != 2 || len(data[qlopen.CronPage](t, a).Data) != 1 {
		t.Fatalf("page 2: %s", a.Data)
	}
	// PUT with id: the schedules become the triggers, updated in place.
	body := fmt.Sprintf(`{"name":"京东签到","command":"task jd_sign.js now","schedule":"0 9 * * *","extra_schedules":[],"labels":[],"id":%d}`, c.ID)
	st, a = f.ql("PUT", "/open/crons", tok, body)
	if u := data[qlopen.Cron](t, a); st != 200 || u.Schedule != "0 9 * * *" || len(u.ExtraSchedules) != 0 || u.Command != "task jd_sign.js now" {
		t.Fatalf("update: %d %s", st, a.Data)
	}
	body = fmt.Sprintf(`{"name":"京东签到","command":"task jd_sign.js now","schedule":"0 9 * * *","extra_schedules":[{"schedule":"0 21 * * *"},{"schedule":"0 22 * * *"}],"id":%d}`, c.ID)
	if st, a = f.ql("PUT", "/open/crons", tok, body); st != 200 || len(data[qlopen.Cron](t, a).ExtraSchedules) != 2 {
		t.Fatalf("update with more schedules: %d %s", st, a.Data)
	}
	// Refused, never dropped.
	for _, b := range []string{
		`{"command":"x","schedule":"@once"}`,
		`{"command":"x","schedule":"0 8 * * *","task_before":"echo pre"}`,
		`{"command":"x","schedule":"0 8 * * *","labels":["daily"]}`,
		`{"command":"x","schedule":"0 8 * * *","colour":"red"}`,
		`{"command":"x","schedule":"not a schedule"}`,
	} {
		if st, a = f.ql("POST", "/open/crons", tok, b); st != 400 || a.Message == "" {
			t.Errorf("%s: %d %+v", b, st, a)
		}
	}
	if st, _ = f.ql("GET", `/open/crons?filters={"status":[0]}`, tok, ""); st != 400 {
		t.Errorf("a filter was ignored: %d", st)
	}
	// index.tsx: run, log, stop, disable, enable, delete take [id].
	ids := fmt.Sprintf("[%d]", c.ID)
	if st, a = f.ql("PUT", "/open/crons/run", tok, ids); st != 200 {
		t.Fatalf("run: %d %+v", st, a)
	}
	_, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, "")
	if got := data[qlopen.Cron](t, a); got.Status != 3 || got.LastExecutionTime == 0 {
		t.Fatalf("after run: %s", a.Data)
	}
	// The overview counts them, names the next fires and the workers.
	var ov struct {
		Tasks     struct{ Total, Enabled int64 }
		Runs      struct{ Active map[string]int64 }
		NextFires []struct{ TaskName string }
		Workers   *struct{ Online, Total int64 }
	}
	if st, b, _ := f.do("GET", "/api/v1/overview?project=home", f.admin, ""); st != 200 || json.Unmarshal(b, &ov) != nil ||
		ov.Tasks.Total != 2 || ov.Tasks.Enabled != 2 || ov.Runs.Active["queued"]+ov.Runs.Active["created"] != 1 || ov.Workers == nil {
		t.Fatalf("overview: %d %s", st, b)
	}
	// The native run list names the task in every row.
	if st, b, _ := f.do("GET", "/api/v1/runs?project=home", f.admin, ""); st != 200 || !strings.Contains(string(b), `"taskName":"京东签到"`) {
		t.Fatalf("runs carry no task name: %d %s", st, b)
	}
	if st, a = f.ql("GET", fmt.Sprintf("/open/crons/%d/log", c.ID), tok, ""); st != 200 || (a.LogStatus != "empty" && a.LogStatus != "running") {
		t.Fatalf("log: %d %+v", st, a)
	}
	if st, _ = f.ql("PUT", "/open/crons/stop", tok, ids); st != 200 {
		t.Fatal("stop")
	}
	_, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, "")
	if got := data[qlopen.Cron](t, a); got.Status != 1 {
		t.Fatalf("after stop: %s", a.Data)
	}
	if st, _ = f.ql("PUT", "/open/crons/disable", tok, ids); st != 200 {
		t.Fatal("disable")
	}
	if _, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, ""); data[qlopen.Cron](t, a).IsDisabled != 1 {
		t.Fatalf("isDisabled: %s", a.Data)
	}
	f.ql("PUT", "/open/crons/enable", tok, ids)

	// Scoped to the project: an app of another project does not see it.
	id2, secret2 := f.app("office", "desk", "crons")
	other := f.token(id2, secret2).Token
	if st, a = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), other, ""); st != 400 {
		t.Fatalf("other project's cron: %d %+v", st, a)
	}
	if _, a = f.ql("GET", "/open/crons", other, ""); data[qlopen.CronPage](t, a).Total != 0 {
		t.Fatalf("other project's list: %s", a.Data)
	}

	if st, _ = f.ql("DELETE", "/open/crons", tok, ids); st != 200 {
		t.Fatal("delete")
	}
	if st, _ = f.ql("GET", fmt.Sprintf("/open/crons/%d", c.ID), tok, ""); st != 400 {
		t.Fatalf("deleted cron: %d", st)
	}
	// The app's changes are audited as the app.
	if st, b, _ := f.do("GET", "/api/v1/audit?actor=app:phone&limit=50", f.admin, ""); st != 200 || !strings.Contains(string(b), "app:phone") {
		t.Fatalf("audit: %d %s", st, b)
	}
}

func TestOpenAPIAuthOnTheControlPlane(t *testing.T) {
	f := newFixture(t)
	f.project("home")
	id, secret := f.app("home", "envs-only", "envs")
	tok := f.token(id, secret).Token
	// A token without the crons scope: QingLong's 401 shape.
	if st, a := f.ql("GET", "/open/crons", tok, ""); st != 401 || a.Code != 401 || a.Message == "" {
		t.Fatalf("no scope: %d %+v", st, a)
	}
	for _, tk := range []string{"", "nonsense", f.admin} {
		if st, a := f.ql("GET", "/open/crons", tk, ""); st != 401 || a.Code != 401 {
			t.Fatalf("token %q: %d %+v", tk, st, a)
		}
	}
	// Routes ql3-control does not map: QingLong's 404 after auth.
	if st, a := f.ql("PUT", "/open/envs/views", tok, "{}"); st != 404 || !strings.Contains(a.Message, "does not serve") {
		t.Fatalf("unmapped: %d %+v", st, a)
	}
	// Expiry (30 days, the injected clock).
	id2, secret2 := f.app("home", "crons", "crons")
	ct := f.token(id2, secret2).Token
	if st, _ := f.ql("GET", "/open/crons", ct, ""); st != 200 {
		t.Fatal("fresh token refused")
	}
	f.clock.Advance(30*24*time.Hour + time.Second)
	if st, a := f.ql("GET", "/open/crons", ct, ""); st != 401 {
		t.Fatalf("expired: %d %+v", st, a)
	}
	// At most five live tokens per app: the oldest goes.
	var toks []string
	for range 6 {
		toks = append(toks, f.token(id2, secret2).Token)
	}
	if st, _ := f.ql("GET", "/open/crons", toks[0], ""); st != 401 {
		t.Fatalf("sixth token kept the first: %d", st)
	}
	if st, _ := f.ql("GET", "/open/crons", toks[5], ""); st != 200 {
		t.Fatalf("newest token: %d", st)
	}
	// Wrong secrets: HTTP 200 code 400, then 429 for this peer.
	for i := range qlopen.TokenFailMax {
		if st, a := f.ql("GET", "/open/auth/token?client_id="+id+"&client_secret=wrong", "", ""); st != 200 || a.Code != 400 {
			t.Fatalf("failure %d: %d %+v", i, st, a)
		}
	}
	st, b, hdr := f.do("GET", "/open/auth/token?client_id="+id+"&client_secret="+secret, "", "")
	if st != 429 || !strings.Contains(string(b), `"code":429`) || hdr.Get("Retry-After") == "" {
		t.Fatalf("over the limit: %d %s", st, b)
	}
	f.clock.Advance(qlopen.TokenFailWindow)
	f.token(id, secret)
	// Deleting the app ends its tokens.
	var list adminapi.List[struct{ ID, Name string }]
	_, lb, _ := f.do("GET", "/api/v1/apps?project=home", f.admin, "")
	_ = json.Unmarshal(lb, &list)
	for _, a := range list.Items {
		if a.Name == "crons" {
			if st, _, _ := f.do("DELETE", "/api/v1/apps/"+a.ID, f.admin, ""); st != 204 {
				t.Fatalf("delete app: %d", st)
			}
		}
	}
	if st, _ := f.ql("GET", "/open/crons", toks[5], ""); st != 401 {
		t.Fatalf("token of a deleted app: %d", st)
	}
}

func TestOpenAPIContractEnvsOnTheControlPlane(t *testing.T) {
	f := newFixture(t)
	f.project("home")
	f.project("office")
	id, secret := f.app("home", "refresher", "envs")
	tok := f.token(id, secret).Token

	// modal.tsx: a create is an array of {value, name, remarks, labels}.
	st, a := f.ql("POST", "/open/envs", tok, `[{"value":"pt_key=a;pt_pin=x;","name":"JD_COOKIE","remarks":"手机","labels":[]},
		{"value":"pt_key=b;pt_pin=y;","name":"JD_COOKIE","remarks":"","labels":[]}]`)
	created := data[[]qlopen.Env](t, a)
	if st != 200 || len(created) != 2 || created[0].ID == 0 || created[0].ID == created[1].ID || created[0].Status != 0 || *created[0].Value != "pt_key=a;pt_pin=x;" {
		t.Fatalf("create: %d %s", st, a.Data)
	}
	// index.tsx: the list with searchValue (values are searched too), values included.
	st, a = f.ql("GET", "/open/envs?searchValue=pt_pin=y", tok, "")
	list := data[[]qlopen.Env](t, a)
	if st != 200 || len(list) != 1 || list[0].ID != created[1].ID || list[0].Value == nil || *list[0].Value != "pt_key=b;pt_pin=y;" {
		t.Fatalf("search: %d %s", st, a.Data)
	}
	var rows []map[string]any
	_ = json.Unmarshal(a.Data, &rows)
	for _, k := range []string{"id", "name", "value", "remarks", "status", "position", "isPinned", "labels", "timestamp", "createdAt", "updatedAt"} {
		if _, found := rows[0][k]; !found {
			t.Errorf("env row lacks QingLong's %q", k)
		}
	}
	// The read of values is audited as the app.
	if st, b, _ := f.do("GET", "/api/v1/audit?actor=app:refresher&action=env.export&limit=5", f.admin, ""); st != 200 || !strings.Contains(string(b), "env.export") {
		t.Fatalf("audit of the read: %d %s", st, b)
	}
	// modal.tsx: an update is {name, value, remarks, labels, id}.
	body := fmt.Sprintf(`{"name":"JD_COOKIE","value":"pt_key=new;pt_pin=x;","remarks":"手机","labels":[],"id":%d}`, created[0].ID)
	if st, a = f.ql("PUT", "/open/envs", tok, body); st != 200 || *data[qlopen.Env](t, a).Value != "pt_key=new;pt_pin=x;" {
		t.Fatalf("update: %d %+v", st, a)
	}
	// index.tsx: disable, then the entry reads status 1; enable.
	one := fmt.Sprintf("[%d]", created[0].ID)
	if st, a = f.ql("PUT", "/open/envs/disable", tok, one); st != 200 {
		t.Fatalf("disable: %d %+v", st, a)
	}
	_, a = f.ql("GET", fmt.Sprintf("/open/envs/%d", created[0].ID), tok, "")
	if e := data[qlopen.Env](t, a); e.Status != 1 || e.Value == nil || *e.Value != "pt_key=new;pt_pin=x;" {
		t.Fatalf("after disable: %s", a.Data)
	}
	f.ql("PUT", "/open/envs/enable", tok, one)
	// index.tsx: drag the second row to the top.
	if st, a = f.ql("PUT", fmt.Sprintf("/open/envs/%d/move", created[1].ID), tok, `{"fromIndex":1,"toIndex":0}`); st != 200 {
		t.Fatalf("move: %d %+v", st, a)
	}
	if _, a = f.ql("GET", "/open/envs", tok, ""); len(data[[]qlopen.Env](t, a)) != 2 || data[[]qlopen.Env](t, a)[0].ID != created[1].ID {
		t.Fatalf("order after move: %s", a.Data)
	}
	// PUT envs/name renames several.
	if st, a = f.ql("PUT", "/open/envs/name", tok, fmt.Sprintf(`{"ids":[%d,%d],"name":"JD_COOKIE2"}`, created[0].ID, created[1].ID)); st != 200 {
		t.Fatalf("rename: %d %+v", st, a)
	}
	// Refusals: unknown id, an empty create, unknown fields, an entry of another project.
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/open/envs/enable", "[999999]"},
		{"POST", "/open/envs", "[]"},
		{"POST", "/open/envs", `[{"name":"A","value":"1","colour":"red"}]`},
		{"POST", "/open/envs", `[{"name":"QL3_X","value":"1"}]`},
	} {
		if st, a = f.ql(c.method, c.path, tok, c.body); st != 400 || a.Message == "" {
			t.Errorf("%s %s %s: %d %+v", c.method, c.path, c.body, st, a)
		}
	}
	id2, secret2 := f.app("office", "other", "envs")
	if st, a = f.ql("GET", fmt.Sprintf("/open/envs/%d", created[0].ID), f.token(id2, secret2).Token, ""); st != 400 {
		t.Fatalf("another project's entry: %d %+v", st, a)
	}
	// A token without the envs scope: QingLong's 401 shape.
	id3, secret3 := f.app("home", "crons-only", "crons")
	if st, a = f.ql("GET", "/open/envs", f.token(id3, secret3).Token, ""); st != 401 || a.Code != 401 || a.Message == "" {
		t.Fatalf("no envs scope: %d %+v", st, a)
	}
	// index.tsx: DELETE envs with [id].
	if st, _ = f.ql("DELETE", "/open/envs", tok, fmt.Sprintf("[%d,%d]", created[0].ID, created[1].ID)); st != 200 {
		t.Fatal("delete")
	}
	if _, a = f.ql("GET", "/open/envs", tok, ""); string(a.Data) != "[]" {
		t.Fatalf("after delete: %s", a.Data)
	}
}

func TestOpenAPILogsAndSystemOnTheControlPlane(t *testing.T) {
	f := newFixture(t)
	f.project("home")
	id, secret := f.app("home", "watcher", "crons", "logs", "system")
	tok := f.token(id, secret).Token
	_, a := f.ql("POST", "/open/crons", tok, `{"name":"京东签到","command":"echo hi","schedule":"0 8 * * *"}`)
	c := data[qlopen.Cron](t, a)
	dir := fmt.Sprint(c.ID)
	// log/index.tsx: the tree, one folder per cron titled with its id.
	st, a := f.ql("GET", "/open/logs", tok, "")
	tree := data[[]qlcompat.File](t, a)
	if st != 200 || len(tree) != 1 || tree[0].Title != dir || tree[0].Type != "directory" {
		t.Fatalf("tree: %d %s", st, a.Data)
	}
	if st, a = f.ql("GET", "/open/logs?path="+dir, tok, ""); st != 200 || string(a.Data) != "[]" {
		t.Fatalf("one cron before any attempt: %d %s", st, a.Data)
	}
	for _, p := range []string{
		"/open/logs/detail?file=nonsense.log&path=" + dir,
		"/open/logs/detail?file=0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b_1.log&path=" + dir,
		"/open/logs/detail?file=x_1.log&path=../etc",
	} {
		if st, a = f.ql("GET", p, tok, ""); st != 400 || a.Message == "" {
			t.Errorf("%s: %d %+v", p, st, a)
		}
	}
	if st, a = f.ql("DELETE", "/open/logs", tok, `{"filename":"x_1.log","path":"`+dir+`","type":"file"}`); st != 400 || !strings.Contains(a.Message, "retention") {
		t.Fatalf("delete: %d %+v", st, a)
	}
	// system.ts GET /: its keys; other items refused one by one.
	st, a = f.ql("GET", "/open/system", tok, "")
	sys := data[map[string]any](t, a)
	for _, k := range []string{"isInitialized", "version", "publishTime", "branch", "changeLog", "changeLogLink"} {
		if _, found := sys[k]; !found || st != 200 {
			t.Errorf("system lacks %q: %d %s", k, st, a.Data)
		}
	}
	if st, a = f.ql("PUT", "/open/system/config/timezone", tok, "{}"); st != 404 || !strings.Contains(a.Message, "time zone") {
		t.Fatalf("refused item: %d %+v", st, a)
	}
}
