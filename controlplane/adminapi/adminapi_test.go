package adminapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/panel"
	"github.com/ql3/ql3/scripts/testio"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type fixture struct {
	t     *testing.T
	url   string
	token string
	db    *pgtest.DB
	logs  *testio.Buffer
}

func newFixture(t *testing.T, ready func(context.Context) error) fixture {
	t.Helper()
	db := pgtest.NewDB(t)
	pub := publication.NewPublisher(db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{})
	_, token, err := pub.CreateAPIToken(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testio.Buffer{}
	adminPool := db.Pool(t, postgres.RoleAdmin)
	srv := httptest.NewServer(adminapi.New(adminapi.Config{UI: panel.UI{}, Backend: pub, Version: "test", Ready: ready,
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Runs:    runops.NewRunOps(db.Pool(t, postgres.RoleRuntime)),
		Scripts: scriptstore.New(adminPool), Tokens: pub,
		DisableWorker: func(ctx context.Context, ref string) (bool, error) {
			return runops.DisableWorker(ctx, adminPool, ref)
		}}))
	t.Cleanup(srv.Close)
	return fixture{t: t, url: srv.URL, token: token, db: db, logs: logs}
}

// call sends body (a string or a value to encode) and decodes the answer.
func (f fixture) call(method, path string, body any, out any) int {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Cache-Control") != "no-store" {
		f.t.Errorf("%s %s: Cache-Control %q", method, path, resp.Header.Get("Cache-Control"))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

func mustStatus(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: status %d, want %d", what, got, want)
	}
}

const echoSpec = `{"kind":"qinglong/command@v1","shell":{"command":"echo hi"}}`

func TestPublicationLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var p controlplane.Project
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"a"}`, &p), 201)
	mustStatus(t, "project b", f.call("POST", "/api/v1/projects", `{"name":"b"}`, nil), 201)
	var projects adminapi.List[controlplane.Project]
	mustStatus(t, "list 1", f.call("GET", "/api/v1/projects?limit=1", nil, &projects), 200)
	if len(projects.Items) != 1 || projects.NextCursor == "" {
		t.Fatalf("first page %+v", projects)
	}
	var page2 adminapi.List[controlplane.Project]
	mustStatus(t, "list 2", f.call("GET", "/api/v1/projects?limit=1&cursor="+projects.NextCursor, nil, &page2), 200)
	if len(page2.Items) != 1 || page2.Items[0].Name != "b" || page2.NextCursor != "" {
		t.Fatalf("second page %+v", page2)
	}

	var task adminapi.Task
	mustStatus(t, "task", f.call("POST", "/api/v1/tasks", `{"project":"a","name":"t","spec":`+echoSpec+`}`, &task), 201)
	var trig adminapi.Trigger
	mustStatus(t, "trigger", f.call("POST", "/api/v1/tasks/"+task.ID+"/triggers", `{"expression":"*/10 * * * * *","name":"fast"}`, &trig), 201)

	// Task update: new revision, trigger re-pinned with a reset schedule.
	var upd adminapi.Task
	mustStatus(t, "update", f.call("PUT", "/api/v1/tasks/"+task.ID, adminapi.UpdateTaskRequest{ExpectedRevision: 1, Name: "t2",
		Spec: json.RawMessage(`{"kind":"qinglong/command@v1","argv":{"file":"/bin/true"}}`)}, &upd), 200)
	if upd.Revision != 2 || upd.Name != "t2" || upd.Digest == task.Digest {
		t.Fatalf("updated task %+v", upd)
	}
	var trig2 adminapi.Trigger
	mustStatus(t, "get trigger", f.call("GET", "/api/v1/tasks/"+task.ID+"/triggers/"+trig.ID, nil, &trig2), 200)
	if trig2.Revision != 2 || trig2.TaskRevision != 2 || trig2.ExecutionDigest != upd.Digest || trig2.Schedule.ClaimVersion != 1 {
		t.Fatalf("trigger after task update %+v", trig2)
	}
	// Trigger update with the stale revision, then the right one.
	var eb adminapi.ErrorBody
	mustStatus(t, "stale trigger", f.call("PUT", "/api/v1/tasks/"+task.ID+"/triggers/"+trig.ID, `{"expectedRevision":1,"expression":"@daily"}`, &eb), 409)
	mustStatus(t, "trigger update", f.call("PUT", "/api/v1/tasks/"+task.ID+"/triggers/"+trig.ID, `{"expectedRevision":2,"expression":"@daily","misfire":"fire_once"}`, &trig2), 200)
	if trig2.Revision != 3 || trig2.Misfire != "fire_once" || trig2.Name != "fast" || trig2.Expression != "@daily" {
		t.Fatalf("updated trigger %+v", trig2)
	}
	// A trigger under another task is not found.
	var other adminapi.Task
	mustStatus(t, "task 2", f.call("POST", "/api/v1/tasks", `{"project":"a","name":"other","spec":`+echoSpec+`}`, &other), 201)
	mustStatus(t, "wrong task", f.call("GET", "/api/v1/tasks/"+other.ID+"/triggers/"+trig.ID, nil, &eb), 404)

	// Disable the task: enabling a trigger is refused; enable again.
	mustStatus(t, "disable", f.call("POST", "/api/v1/tasks/"+task.ID+"/disable", nil, &upd), 200)
	if upd.Enabled {
		t.Fatal("task still enabled")
	}
	mustStatus(t, "enabled trigger on disabled task", f.call("POST", "/api/v1/tasks/"+task.ID+"/triggers", `{"expression":"@hourly"}`, &eb), 409)
	if eb.Field != "enabled" {
		t.Fatalf("error %+v, want field enabled", eb)
	}
	mustStatus(t, "patch", f.call("PATCH", "/api/v1/tasks/"+task.ID, `{"enabled":true}`, &upd), 200)
	mustStatus(t, "patch without enabled", f.call("PATCH", "/api/v1/tasks/"+task.ID, `{}`, &eb), 400)

	// Archive: nothing enabled can be published any more.
	var archived controlplane.Project
	mustStatus(t, "archive", f.call("POST", "/api/v1/projects/a/archive", fmt.Sprintf(`{"expectedVersion":%d}`, p.Version), &archived), 200)
	if archived.Status != "archived" {
		t.Fatalf("archived %+v", archived)
	}
	mustStatus(t, "trigger in archived project", f.call("POST", "/api/v1/tasks/"+task.ID+"/triggers", `{"expression":"@hourly"}`, &eb), 409)
	mustStatus(t, "task in archived project", f.call("POST", "/api/v1/tasks", `{"project":"a","name":"late","spec":`+echoSpec+`}`, &eb), 409)

	var tasks adminapi.List[adminapi.Task]
	mustStatus(t, "list tasks", f.call("GET", "/api/v1/tasks?project=a", nil, &tasks), 200)
	if len(tasks.Items) != 2 {
		t.Fatalf("tasks %+v", tasks)
	}
	var triggers adminapi.List[adminapi.Trigger]
	mustStatus(t, "list triggers", f.call("GET", "/api/v1/tasks/"+task.ID+"/triggers", nil, &triggers), 200)
	if len(triggers.Items) != 1 || triggers.Items[0].ID != trig.ID {
		t.Fatalf("triggers %+v", triggers)
	}
	if strings.Contains(f.logs.String(), f.token) || strings.Contains(f.logs.String(), "ql3c_") {
		t.Fatal("the access log contains the token")
	}
}

func TestRunsAndWorkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	var task adminapi.Task
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"p"}`, nil), 201)
	mustStatus(t, "task", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":`+echoSpec+`}`, &task), 201)
	runtime := f.db.Pool(t, postgres.RoleRuntime)
	runID := uuid.Must(uuid.NewV7())
	if _, err := runtime.Exec(ctx, `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id,
		execution_digest, origin, idempotency_key, scheduled_for_ms, status, retry_max_attempts, retry_backoff_base_ms,
		retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms, created_at_ms, updated_at_ms)
		VALUES ($1, $2, $3, 1, $4, $5, 'manual', 'k', 5, 'queued', 1, 0, 0, false, 1000, 0, 7, 7)`,
		runID, task.ProjectID, task.ID, task.ExecutionRevisionID, task.Digest[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Exec(ctx, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, payload, created_at_ms)
		VALUES ($1, 1, $2, 'run.created', '{"origin":"manual"}', 7), ($1, 2, $2, 'run.queued', '{}', 7)`, runID, task.ProjectID); err != nil {
		t.Fatal(err)
	}
	var runs adminapi.List[controlplane.Run]
	mustStatus(t, "runs", f.call("GET", "/api/v1/runs?project=p&status=queued,running&task="+task.ID, nil, &runs), 200)
	if len(runs.Items) != 1 || runs.Items[0].ID != runID.String() {
		t.Fatalf("runs %+v", runs)
	}
	var run controlplane.Run
	mustStatus(t, "run", f.call("GET", "/api/v1/runs/"+runID.String(), nil, &run), 200)
	var events adminapi.List[controlplane.RunEvent]
	mustStatus(t, "events", f.call("GET", "/api/v1/runs/"+runID.String()+"/events?limit=1", nil, &events), 200)
	if len(events.Items) != 1 || events.NextCursor != "1" || string(events.Items[0].Payload) != `{"origin":"manual"}` {
		t.Fatalf("events %+v", events)
	}
	var rest adminapi.List[controlplane.RunEvent]
	mustStatus(t, "events after", f.call("GET", "/api/v1/runs/"+runID.String()+"/events?after="+events.NextCursor, nil, &rest), 200)
	if len(rest.Items) != 1 || rest.Items[0].Type != "run.queued" || rest.NextCursor != "" {
		t.Fatalf("events after 1: %+v", rest)
	}
	var eb adminapi.ErrorBody
	mustStatus(t, "bad status", f.call("GET", "/api/v1/runs?status=exploded", nil, &eb), 400)
	mustStatus(t, "missing run", f.call("GET", "/api/v1/runs/"+uuid.Must(uuid.NewV7()).String(), nil, &eb), 404)
	mustStatus(t, "bad after", f.call("GET", "/api/v1/runs/"+runID.String()+"/events?after=-1", nil, &eb), 400)

	var w controlplane.Worker
	mustStatus(t, "register", f.call("POST", "/api/v1/workers", `{"name":"w1","tlsIdentity":"CN=w1"}`, &w), 201)
	var cred adminapi.IssuedCredential
	mustStatus(t, "issue", f.call("POST", "/api/v1/workers/w1/credentials", nil, &cred), 201)
	if id, _, err := postgres.ParseWorkerCredential(cred.Credential); err != nil || id != cred.ID {
		t.Fatalf("issued %+v: %v", cred, err)
	}
	var rotated adminapi.IssuedCredential
	mustStatus(t, "rotate", f.call("POST", "/api/v1/workers/"+w.ID+"/credentials/rotate", `{"graceMs":1000}`, &rotated), 201)
	var creds adminapi.List[controlplane.WorkerCredential]
	mustStatus(t, "list creds", f.call("GET", "/api/v1/workers/w1/credentials", nil, &creds), 200)
	if len(creds.Items) != 2 {
		t.Fatalf("credentials %+v", creds)
	}
	var revoked controlplane.WorkerCredential
	mustStatus(t, "revoke", f.call("POST", "/api/v1/workers/w1/credentials/"+cred.ID+"/revoke", nil, &revoked), 200)
	if revoked.Status != "revoked" {
		t.Fatalf("revoked %+v", revoked)
	}
	mustStatus(t, "rotate bad grace", f.call("POST", "/api/v1/workers/w1/credentials/rotate", `{"graceMs":-1}`, &eb), 400)
	if eb.Field != "graceMs" {
		t.Fatalf("error %+v", eb)
	}
	// Without a body the old credential stays valid until the worker
	// presents the new one, at most the default 24 h (observe-then-revoke).
	var next adminapi.IssuedCredential
	mustStatus(t, "rotate with defaults", f.call("POST", "/api/v1/workers/w1/credentials/rotate", nil, &next), 201)
	mustStatus(t, "list creds", f.call("GET", "/api/v1/workers/w1/credentials", nil, &creds), 200)
	for _, c := range creds.Items {
		if c.ID == rotated.ID && (c.Status != "active" || c.SupersededBy != next.ID ||
			c.RevokeAfterMs < next.CreatedAtMs+publication.DefaultCredentialGraceMs-60_000) {
			t.Fatalf("the previous credential after a default rotate: %+v", c)
		}
	}
	if strings.Contains(f.logs.String(), "ql3w_") {
		t.Fatal("the log contains a worker credential")
	}
}

func TestRequestHygiene(t *testing.T) {
	t.Parallel()
	notReady := &controlplane.SchemaError{Kind: controlplane.ErrSchemaBehind, DatabaseVersion: 1, BinaryVersion: 2}
	f := newFixture(t, func(context.Context) error { return notReady })
	var h adminapi.Health
	resp, err := http.Get(f.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 503 || !strings.Contains(h.Error, "pending migrations") {
		t.Fatalf("readyz not ready: %d %+v %v", resp.StatusCode, h, err)
	}
	resp2, err := http.Get(f.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 200 {
		t.Fatalf("healthz %d", resp2.StatusCode)
	}

	req, _ := http.NewRequest("POST", f.url+"/api/v1/projects", strings.NewReader(`{"name":"x"}`))
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "text/plain")
	resp3, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb adminapi.ErrorBody
	_ = json.NewDecoder(resp3.Body).Decode(&eb)
	resp3.Body.Close()
	if resp3.StatusCode != 400 || eb.Field != "Content-Type" {
		t.Fatalf("wrong content type: %d %+v", resp3.StatusCode, eb)
	}
	for name, body := range map[string]string{
		"empty":      "",
		"array":      `[1]`,
		"trailing":   `{"name":"x"} {}`,
		"duplicate":  `{"name":"x","name":"y"}`,
		"miscased":   `{"Name":"x"}`,
		"wrong type": `{"name":5}`,
	} {
		if code := f.call("POST", "/api/v1/projects", body, &eb); code != 400 || eb.Code != errs.Invalid {
			t.Errorf("%s body: %d %+v", name, code, eb)
		}
	}
	if code := f.call("GET", "/api/v1/projects?limit=abc", nil, &eb); code != 400 || eb.Field != "limit" {
		t.Errorf("bad limit: %d %+v", code, eb)
	}
	if code := f.call("DELETE", "/api/v1/projects", nil, &eb); code != 404 && code != 405 {
		t.Errorf("unsupported method: %d", code)
	}
	for _, st := range []struct {
		code string
		want int
	}{{errs.Invalid, 400}, {errs.TooLarge, 413}, {errs.NotFound, 404}, {errs.Conflict, 409}, {errs.Unauthorized, 401},
		{errs.Forbidden, 403}, {errs.Unavailable, 503}, {errs.Internal, 500}, {"other", 500}} {
		if got := errs.HTTPStatus(st.code); got != st.want {
			t.Errorf("Status(%s) = %d, want %d", st.code, got, st.want)
		}
	}
}
