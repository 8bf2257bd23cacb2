package adminapi_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/accounts"
	"github.com/ql3/ql3/controlplane/postgres/depstore"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/openapps"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/panel"
	"github.com/ql3/ql3/scripts/openapitest"
)

var updateOpenAPI = flag.Bool("update", false, "rewrite openapi.json from the route table")

// TestOpenAPIDocumentUpToDate regenerates the document from the route
// table and the wire types; -update rewrites openapi.json.
func TestOpenAPIDocumentUpToDate(t *testing.T) {
	doc, err := adminGenerator().Document(adminRoutes())
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckUpToDate(t, doc, adminapi.OpenAPIDocument(), "openapi.json", *updateOpenAPI,
		"go test ./adminapi -run TestOpenAPIDocumentUpToDate -update")
}

// notAPI are mux patterns outside the JSON API: the panel's static files
// and the JSON 404 for everything else.
var notAPI = map[string]bool{"GET /{$}": true, "GET /panel/app.js": true, "GET /panel/app.css": true, "/": true,
	"/open/": true} // QingLong's Open API: its shapes are QingLong's (ADR 0057), held by qlcompat's contract test

// TestOpenAPIRoutesMatchMux walks the patterns the server registered on
// its ServeMux against the served document, both ways.
func TestOpenAPIRoutesMatchMux(t *testing.T) {
	openapitest.CheckRoutes(t, adminapi.OpenAPIDocument(), adminapi.Patterns(adminapi.New(adminapi.Config{UI: panel.UI{}})), notAPI,
		" (add it to adminRoutes, then -update)")
}

// TestOpenAPIExamples drives every route on PostgreSQL, records each
// exchange and validates it against the document with kin-openapi
// (OpenAPI 3.1, JSON Schema 2020-12).
func TestOpenAPIExamples(t *testing.T) {
	doc := openapitest.Load(t, adminapi.OpenAPIDocument())
	db := pgtest.NewDB(t)
	pub := publication.NewPublisher(db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{})
	_, token, err := pub.CreateAPIToken(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	adminPool := db.Pool(t, postgres.RoleAdmin)
	envs := envstore.New(adminPool)
	kek, _ := envseal.NewKEK()
	if err := envs.UnlockEnv(context.Background(), kek, "/test/env.key"); err != nil {
		t.Fatal(err)
	}
	rec := &openapitest.Recorder{}
	srv := httptest.NewServer(rec.Wrap(adminapi.New(adminapi.Config{UI: panel.UI{}, Backend: pub, Version: "test", Envs: envs,
		Logger:  slog.New(slog.DiscardHandler),
		Runs:    runops.NewRunOps(db.Pool(t, postgres.RoleRuntime)),
		Scripts: scriptstore.New(adminPool),
		Notify:  notifyPorts(t, db), // openapi_notify_test.go
		Apps:    openapps.New(adminPool), Tokens: pub,
		Accounts: accounts.New(adminPool), Subscriptions: subsService(t, db),
		Deps:    depstore.New(adminPool),
		Imports: importService(t, adminPool, pub, envs), // openapi_import_test.go
		DisableWorker: func(ctx context.Context, ref string) (bool, error) {
			return runops.DisableWorker(ctx, adminPool, ref)
		}})))
	t.Cleanup(srv.Close)
	f := fixture{t: t, url: srv.URL, token: token}
	send := func(method, path, body string, hdr ...string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	id := func(method, path, body string) string {
		var v struct{ ID string }
		if code := f.call(method, path, body, &v); code >= 300 {
			t.Fatalf("%s %s: %d", method, path, code)
		}
		return v.ID
	}

	send("GET", "/healthz", "")
	send("GET", "/readyz", "")
	send("GET", "/metrics", "")
	f.call("GET", adminapi.OpenAPIPath, nil, nil)
	f.call("GET", "/api/v1/session", nil, nil)
	send("POST", "/api/v1/session", `{"token":"`+token+`"}`)
	send("POST", "/api/v1/session", `{"token":"wrong"}`)
	f.call("DELETE", "/api/v1/session", nil, nil)
	f.call("GET", "/api/v1/schedule/preview?expression=30+2+*+*+*&timeZone=Europe/Berlin&count=5&afterMs=1774828800000", nil, nil)
	f.call("GET", "/api/v1/schedule/preview?expression=nope", nil, nil)

	proj := id("POST", "/api/v1/projects", `{"name":"ops","mutationId":"p1"}`)
	f.call("POST", "/api/v1/projects", `{"name":"other","mutationId":"p1"}`, nil)
	f.call("GET", "/api/v1/projects?limit=5", nil, nil)
	f.call("GET", "/api/v1/projects/ops", nil, nil)
	f.call("GET", "/api/v1/projects/nope", nil, nil)
	task := id("POST", "/api/v1/tasks", `{"project":"ops","name":"backup","spec":{"kind":"qinglong/command@v1","argv":{"file":"/bin/true"},"concurrency":"allow"},"triggers":[{"expression":"@daily","timeZone":"Europe/Berlin"}]}`)
	f.call("POST", "/api/v1/tasks", `{"project":"ops","name":"x","colour":"red"}`, nil)
	f.call("GET", "/api/v1/tasks?project=ops&limit=10", nil, nil)
	f.call("GET", "/api/v1/tasks?project=ops&q=BACK&limit=10", nil, nil)
	f.call("GET", "/api/v1/tasks/"+task, nil, nil)
	f.call("PUT", "/api/v1/tasks/"+task, `{"expectedRevision":1,"name":"backup","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"},"concurrency":"allow"}}`, nil)
	f.call("PUT", "/api/v1/tasks/"+task, `{"expectedRevision":1,"name":"backup","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"}}}`, nil)
	f.call("PATCH", "/api/v1/tasks/"+task, `{"enabled":false}`, nil)
	f.call("POST", "/api/v1/tasks/"+task+"/enable", "", nil)
	f.call("POST", "/api/v1/tasks/"+task+"/disable", `{"mutationId":"d1"}`, nil)
	f.call("POST", "/api/v1/tasks/"+task+"/enable", "", nil)
	trig := id("POST", "/api/v1/tasks/"+task+"/triggers", `{"expression":"@hourly","misfire":"fire_once","graceMs":0}`)
	f.call("POST", "/api/v1/tasks/"+task+"/triggers", `{"expression":"* * *"}`, nil)
	f.call("GET", "/api/v1/tasks/"+task+"/triggers", nil, nil)
	f.call("GET", "/api/v1/tasks/"+task+"/triggers/"+trig, nil, nil)
	f.call("PUT", "/api/v1/tasks/"+task+"/triggers/"+trig, `{"expectedRevision":1,"expression":"@daily"}`, nil)

	run := id("POST", "/api/v1/tasks/"+task+"/runs", `{"idempotencyKey":"k1"}`)
	f.call("POST", "/api/v1/tasks/"+task+"/runs", `{"idempotencyKey":"k1"}`, nil)
	f.call("GET", "/api/v1/runs?project=ops&status=queued,running&limit=5", nil, nil)
	f.call("GET", "/api/v1/runs/"+run, nil, nil)
	f.call("GET", "/api/v1/runs/"+run+"/events?after=0&limit=10", nil, nil)
	f.call("GET", "/api/v1/runs/"+run+"/log", nil, nil)
	f.call("GET", "/api/v1/runs/"+run+"/attempts/1/log?stream=stdout", nil, nil)
	f.call("POST", "/api/v1/runs/"+run+"/cancel", "", nil)
	f.call("POST", "/api/v1/runs/"+run+"/cancel", "", nil)
	f.call("GET", "/api/v1/runs/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", nil, nil)
	gone := id("POST", "/api/v1/tasks", `{"project":"ops","name":"gone","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"}},"triggers":[{"expression":"@hourly","name":"gone-hourly"}]}`)
	goneTrigger := id("POST", "/api/v1/tasks/"+gone+"/triggers", `{"expression":"@daily"}`)
	f.call("DELETE", "/api/v1/tasks/"+gone+"/triggers/"+goneTrigger, nil, nil)
	f.call("DELETE", "/api/v1/tasks/"+gone+"?mutationId=del-1", nil, nil)
	f.call("DELETE", "/api/v1/tasks/"+gone, nil, nil)

	wk := id("POST", "/api/v1/workers", `{"name":"w1"}`)
	f.call("POST", "/api/v1/workers", `{"name":"w1"}`, nil)
	f.call("GET", "/api/v1/workers", nil, nil)
	f.call("GET", "/api/v1/workers/w1", nil, nil)
	cred := id("POST", "/api/v1/workers/"+wk+"/credentials", "")
	f.call("POST", "/api/v1/workers/"+wk+"/credentials/rotate", `{"graceMs":0}`, nil)
	f.call("GET", "/api/v1/workers/"+wk+"/credentials", nil, nil)
	f.call("POST", "/api/v1/workers/"+wk+"/credentials/"+cred+"/revoke", "", nil)
	f.call("POST", "/api/v1/workers/w1/disable", "", nil)
	envs1 := "/api/v1/projects/ops/envs"
	ev := id("POST", envs1, `{"name":"COOKIE","value":"sekrit-1","remarks":"account 1","labels":["jd"]}`)
	f.call("POST", envs1, `{"name":"QL3_X","value":"v"}`, nil)
	f.call("GET", envs1+"?q=cook&limit=10", nil, nil)
	f.call("GET", envs1+"/"+ev, nil, nil)
	f.call("PATCH", envs1+"/"+ev, `{"remarks":"account one","pinned":true}`, nil)
	f.call("POST", envs1+"/"+ev+"/disable", "", nil)
	f.call("POST", envs1+"/"+ev+"/enable", "", nil)
	f.call("POST", envs1+"/import", `{"lines":"COOKIE=sekrit-2\nTOKEN=abc"}`, nil)
	f.call("POST", envs1+"/"+ev+"/move", `{"before":""}`, nil)
	f.call("POST", envs1+"/"+ev+"/reveal", "", nil)
	f.call("POST", envs1+"/export", `{"format":"lines","values":true}`, nil)
	f.call("POST", envs1+"/export", `{}`, nil)
	f.call("DELETE", envs1+"/"+ev, nil, nil)
	f.call("GET", "/api/v1/projects/nope/envs", nil, nil)
	f.call("GET", "/api/v1/audit?limit=5", nil, nil)
	scriptExamples(t, send, f, token)
	f.call("GET", "/api/v1/overview", nil, nil)
	f.call("GET", "/api/v1/overview?project=ops", nil, nil)
	exerciseSubs(t, f, send, token, id)
	exerciseViews(f, id)                                   // openapi_views_test.go
	exerciseDeps(t, f, id, func(sql string, args ...any) { // openapi_deps_test.go
		if _, err := db.Conn(t).Exec(context.Background(), sql, args...); err != nil {
			t.Fatal(err)
		}
	})
	app := id("POST", "/api/v1/apps", `{"project":"ops","name":"bot","scopes":["crons","envs"]}`)
	f.call("POST", "/api/v1/apps", `{"project":"ops","name":"bot","scopes":["crons"]}`, nil)
	f.call("POST", "/api/v1/apps", `{"project":"ops","name":"x","scopes":["root"]}`, nil)
	f.call("GET", "/api/v1/apps?project=ops", nil, nil)
	f.call("DELETE", "/api/v1/apps/"+app, nil, nil)
	f.call("DELETE", "/api/v1/apps/"+app, nil, nil)
	tok := id("POST", "/api/v1/tokens", `{"name":"ci","scopes":["runs","read-only"],"expiresAtMs":`+strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)+`}`)
	f.call("POST", "/api/v1/tokens", `{"name":"ci","scopes":["root"]}`, nil)
	f.call("GET", "/api/v1/tokens", nil, nil)
	f.call("DELETE", "/api/v1/tokens/"+tok, nil, nil)
	f.call("DELETE", "/api/v1/tokens/nope", nil, nil)
	accountExamples(t, f, send) // openapi_access_test.go
	f.call("POST", "/api/v1/projects/"+proj+"/archive", `{"expectedVersion":99}`, nil)
	f.call("POST", "/api/v1/projects/"+proj+"/archive", "", nil)
	exerciseNotify(t, f, id) // openapi_notify_test.go

	importExamples(t, f, send) // openapi_import_test.go
	send("GET", "/api/v1/projects", "", "Authorization", "Bearer wrong")
	send("POST", "/api/v1/projects", `{"name":"x"}`, "Authorization", "Bearer "+token, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")

	doc.Validate(t, rec)
}
