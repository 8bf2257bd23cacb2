package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/app"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// runCmd runs one ql3-control invocation with env, returning stdout.
func runCmd(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &app.Main{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, Version: "test"}
	if err := m.ParseFlags(args); err != nil {
		return "", err
	}
	defer m.Close()
	err := m.Run(context.Background())
	if strings.Contains(errOut.String(), "ql3c_") {
		t.Errorf("%v: stderr contains a token: %s", args, errOut.String())
	}
	return out.String(), err
}

type httpClient struct {
	t     *testing.T
	base  string
	token string
}

// do sends a request and decodes the JSON answer into out (when not nil).
func (c httpClient) do(method, path, body string, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Fatalf("%s %s: content type %q, body %s", method, path, ct, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

// The end-to-end story: migrate a fresh database, create a token,
// serve, publish a task and a trigger over HTTP (raw and through the CLI
// client), read them back, and get 4xx answers naming the field for bad
// input.
func TestEndToEnd(t *testing.T) {
	// Not parallel: the leak check below sees the whole process, so it
	// runs before the parallel tests that serve their own Main start (their
	// servers' goroutines were reported as this test's leaks).
	cluster := pgtest.Shared(t)
	// Everything this test starts (server, pools, client connections) must
	// be gone when Close and the cleanups are done.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		// A parallel test's own PostgreSQL cluster (replication_test.go's
		// pgtest.NewCluster) may start while this one runs: its process
		// waiter and output copier are not this test's; this test starts
		// no process.
		goleak.VerifyNone(t, ignore,
			goleak.IgnoreAnyFunction("github.com/ql3/ql3/controlplane/pgtest.(*Cluster).launch.func1"),
			goleak.IgnoreAnyFunction("os/exec.(*Cmd).writerDescriptor.func1"))
	})
	db := cluster.NewEmptyDB(t)
	superDSN := db.DSN("")
	env := map[string]string{"QL3_DSN": superDSN}

	out, err := runCmd(t, env, "migrate")
	if err != nil || !strings.Contains(out, fmt.Sprintf("schema at version %d", len(migrations.Postgres()))) {
		t.Fatalf("migrate: %q, %v", out, err)
	}
	if out, err = runCmd(t, env, "migrate"); err != nil || !strings.Contains(out, "applied now: []") {
		t.Fatalf("second migrate must be a no-op: %q, %v", out, err)
	}
	out, err = runCmd(t, env, "token", "create", "--name", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(out)
	if _, _, err := postgres.ParseAPIToken(token); err != nil {
		t.Fatalf("token create printed %q", out)
	}

	// serve with the admin role's own DSN (the token was made with the
	// single DSN + SET ROLE path). migrate creates roles NOLOGIN; letting
	// one log in is the deployment's decision.
	for _, role := range []string{postgres.RoleAdmin, postgres.RoleRuntime} {
		if err := postgres.EnableLogin(context.Background(), db.Conn(t), role, ""); err != nil {
			t.Fatal(err)
		}
	}
	srv := &app.Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, Version: "test"}
	if err := srv.ParseFlags([]string{"serve", "--admin-dsn", db.DSN(postgres.RoleAdmin),
		"--runtime-dsn", db.DSN(postgres.RoleRuntime), "--listen", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	base := "http://" + srv.Addr()
	c := httpClient{t: t, base: base, token: token}
	anon := httpClient{t: t, base: base}

	var health adminapi.Health
	if code := anon.do("GET", "/readyz", "", &health); code != 200 || health.Status != "ok" {
		t.Fatalf("readyz: %d %+v", code, health)
	}
	var eb adminapi.ErrorBody
	if code := anon.do("GET", "/api/v1/projects", "", &eb); code != 401 || eb.Code != errs.Unauthorized {
		t.Fatalf("no token: %d %+v", code, eb)
	}
	bad := httpClient{t: t, base: base, token: token[:len(token)-2] + "00"}
	if code := bad.do("GET", "/api/v1/projects", "", &eb); code != 401 {
		t.Fatalf("wrong token: %d %+v", code, eb)
	}

	// Raw HTTP: project, task, trigger.
	var proj controlplane.Project
	if code := c.do("POST", "/api/v1/projects", `{"name":"ops","mutationId":"p1"}`, &proj); code != 201 {
		t.Fatalf("create project: %d", code)
	}
	var task adminapi.Task
	if code := c.do("POST", "/api/v1/tasks", `{"project":"ops","name":"backup","spec":{"kind":"qinglong/command@v1","argv":{"file":"/usr/bin/backup","args":["--all"]},"retry":{"maxAttempts":3,"backoffBaseMs":1000,"backoffMaxMs":60000}}}`, &task); code != 201 {
		t.Fatalf("create task: %d", code)
	}
	if task.ProjectID != proj.ID || task.Revision != 1 || task.Spec.Retry.MaxAttempts != 3 || task.Spec.TimeoutMs != 86_400_000 {
		t.Fatalf("created task %+v", task)
	}
	var trig adminapi.Trigger
	if code := c.do("POST", "/api/v1/tasks/"+task.ID+"/triggers", `{"expression":"30 2 * * *","timeZone":"Europe/Berlin","misfire":"fire_once","graceMs":0}`, &trig); code != 201 {
		t.Fatalf("create trigger: %d", code)
	}
	if trig.TaskRevision != 1 || trig.ExecutionDigest != task.Digest || trig.GraceMs != 0 || trig.Schedule.TriggerRevision != 1 {
		t.Fatalf("created trigger %+v", trig)
	}
	var got adminapi.Task
	if code := c.do("GET", "/api/v1/tasks/"+task.ID, "", &got); code != 200 || len(got.Triggers) != 1 || got.Triggers[0].ID != trig.ID || got.Digest != task.Digest {
		t.Fatalf("get task: %d %+v", code, got)
	}

	// Errors: status, code and field.
	errCases := []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		{"spec field out of range", "POST", "/api/v1/tasks", `{"project":"ops","name":"x","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"},"retry":{"maxAttempts":99}}}`, 400, errs.Invalid, "spec.retry.maxAttempts"},
		{"bad semver range", "POST", "/api/v1/tasks", `{"project":"ops","name":"x","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"},"placement":{"required":{"runtimes":{"python":"~>nope"}}}}}`, 400, errs.Invalid, "spec.placement.required.runtimes.python"},
		{"unknown field", "POST", "/api/v1/tasks", `{"project":"ops","name":"x","colour":"red","spec":{}}`, 400, errs.Invalid, "colour"},
		{"unknown spec field", "POST", "/api/v1/tasks", `{"project":"ops","name":"x","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"},"sudo":true}}`, 400, errs.Invalid, "spec.sudo"},
		{"unknown project", "POST", "/api/v1/tasks", `{"project":"nope","name":"x","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"}}}`, 400, errs.Invalid, "project"},
		{"bad cron", "POST", "/api/v1/tasks/" + task.ID + "/triggers", `{"expression":"* * *"}`, 400, errs.Invalid, "expression"},
		{"bad zone", "POST", "/api/v1/tasks/" + task.ID + "/triggers", `{"expression":"@daily","timeZone":"Nowhere/City"}`, 400, errs.Invalid, "timeZone"},
		{"stale revision", "PUT", "/api/v1/tasks/" + task.ID, `{"expectedRevision":5,"name":"backup","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"}}}`, 409, errs.Conflict, "expectedRevision"},
		{"missing revision", "PUT", "/api/v1/tasks/" + task.ID + "/triggers/" + trig.ID, `{"expression":"@daily"}`, 400, errs.Invalid, "expectedRevision"},
		{"mutation reuse", "POST", "/api/v1/projects", `{"name":"other","mutationId":"p1"}`, 409, errs.Conflict, "mutationId"},
		{"unknown task", "GET", "/api/v1/tasks/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "", 404, errs.NotFound, ""},
		{"no route", "GET", "/api/v1/nothing", "", 404, errs.NotFound, ""},
		{"body too large", "POST", "/api/v1/projects", `{"name":"` + strings.Repeat("a", adminapi.DefaultMaxBodyBytes) + `"}`, 413, errs.TooLarge, ""},
		{"bad limit", "GET", "/api/v1/runs?limit=0", "", 400, errs.Invalid, "limit"},
	}
	for _, tc := range errCases {
		var eb adminapi.ErrorBody
		code := c.do(tc.method, tc.path, tc.body, &eb)
		if code != tc.status || eb.Code != tc.code || eb.Field != tc.field || eb.Message == "" {
			t.Errorf("%s: %d %+v, want %d %s field %q", tc.name, code, eb, tc.status, tc.code, tc.field)
		}
	}
	// An identical replay returns the original project.
	var again controlplane.Project
	if code := c.do("POST", "/api/v1/projects", `{"name":"ops","mutationId":"p1"}`, &again); code != 201 || again != proj {
		t.Fatalf("replay: %d %+v, want %+v", code, again, proj)
	}

	// The CLI client against the same server.
	dir := t.TempDir()
	specFile := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(specFile, []byte(`{"kind":"qinglong/command@v1","shell":{"command":"echo hi"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cenv := map[string]string{"QL3_SERVER": base, "QL3_TOKEN": token}
	out, err = runCmd(t, cenv, "task", "create", "--project", proj.ID, "--name", "hello", "--spec-file", specFile, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cliTask adminapi.Task
	if err := json.Unmarshal([]byte(out), &cliTask); err != nil || cliTask.Name != "hello" {
		t.Fatalf("cli task create: %q, %v", out, err)
	}
	if _, err := runCmd(t, cenv, "trigger", "create", "--task", cliTask.ID, "--expression", "@hourly", "--grace-ms", "5000"); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, cenv, "trigger", "create", "--task", cliTask.ID, "--expression", "@hourly", "--misfire", "sometimes")
	if errs.Code(err) != errs.Invalid || errs.Field(err) != "misfire" {
		t.Fatalf("cli bad trigger: %v, want invalid misfire", err)
	}
	out, err = runCmd(t, cenv, "task", "get", "--id", cliTask.ID, "--json")
	if err != nil || !strings.Contains(out, `"graceMs": 5000`) {
		t.Fatalf("cli task get: %q, %v", out, err)
	}
	out, err = runCmd(t, cenv, "worker", "register", "--name", "edge-1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var wk controlplane.Worker
	if err := json.Unmarshal([]byte(out), &wk); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, cenv, "worker", "issue-credential", "--id", "edge-1", "--json")
	if err != nil || !strings.Contains(out, `"credential": "ql3w_`) {
		t.Fatalf("issue credential: %q, %v", out, err)
	}
	credDir := filepath.Join(t.TempDir(), "cred")
	if err := os.Mkdir(credDir, 0o700); err != nil {
		t.Fatal(err)
	}
	credFile := filepath.Join(credDir, "credential")
	out, err = runCmd(t, cenv, "worker", "issue-credential", "--id", "edge-1", "--credential-file", credFile, "--json")
	if err != nil || strings.Contains(out, "ql3w_") || !strings.Contains(out, `"status": "active"`) {
		t.Fatalf("issue credential to a file must not print it: %q, %v", out, err)
	}
	if data, err := os.ReadFile(credFile); err != nil || !strings.HasPrefix(string(data), "ql3w_") {
		t.Fatalf("credential file: %v (%d bytes)", err, len(data))
	}
	if st, _ := os.Stat(credFile); st.Mode().Perm() != 0o600 {
		t.Fatalf("credential file mode %v, want 0600", st.Mode().Perm())
	}
	out, err = runCmd(t, cenv, "worker", "credentials", "--id", wk.ID, "--json")
	if err != nil || strings.Contains(out, "ql3w_") || !strings.Contains(out, `"status": "active"`) {
		t.Fatalf("credential list must not show secrets: %q, %v", out, err)
	}
	if _, err := runCmd(t, cenv, "trigger", "update", "--id", trig.ID, "--expected-revision", "1", "--expression", "@daily"); errs.Field(err) != "task" {
		t.Fatalf("trigger update without --task: %v", err)
	}
	if _, err := runCmd(t, map[string]string{"QL3_SERVER": base}, "task", "list"); errs.Field(err) != "token-file" {
		t.Fatalf("client without a token: %v", err)
	}

	// The replica's scheduler (started by serve after startup recovery)
	// admits an every-second trigger published over the API: queued Runs
	// with the cron idempotency key, one per occurrence.
	var tick adminapi.Trigger
	if code := c.do("POST", "/api/v1/tasks/"+task.ID+"/triggers", `{"expression":"* * * * * *","name":"tick"}`, &tick); code != 201 {
		t.Fatalf("create every-second trigger: %d", code)
	}
	var runs adminapi.List[controlplane.Run]
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code := c.do("GET", "/api/v1/runs?trigger="+tick.ID, "", &runs); code != 200 {
			t.Fatalf("list runs: %d", code)
		}
		if len(runs.Items) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler admitted %d runs of an every-second trigger in 30 s", len(runs.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The task's concurrency policy is forbid (the default) and no worker
	// runs anything: the first occurrence stays queued, every later one is
	// admitted as skipped (cancelled, no attempt).
	seen := map[string]bool{}
	queued := 0
	for _, r := range runs.Items {
		if r.Status == "queued" {
			queued++
		}
		skipped := r.Status == "cancelled" && r.AttemptCount == 0
		if (r.Status != "queued" && !skipped) || !strings.HasPrefix(r.IdempotencyKey, "ql3:cron:v1:"+tick.ID+":") || seen[r.IdempotencyKey] {
			t.Fatalf("admitted run %+v", r)
		}
		seen[r.IdempotencyKey] = true
	}
	if queued != 1 {
		t.Fatalf("%d queued Runs of a forbid task, want 1", queued)
	}

	// The operator's run commands (issue 10): run-now is idempotent per
	// key and, under forbid with a queued Run, admitted as skipped; show
	// explains why the queued one waits; cancel stops it; logs of a Run
	// that never ran print nothing; worker show has no session yet.
	// Skipped: the JSON answer and ErrRunSkipped (exit 8); in text, one
	// word and the reason (#27).
	out, err = runCmd(t, cenv, "run", "now", "--task", task.ID, "--idempotency-key", "e2e-1", "--json")
	var now adminapi.RunView
	if !errors.Is(err, app.ErrRunSkipped) || json.Unmarshal([]byte(out), &now) != nil || now.Created == nil || !*now.Created || now.Status != "cancelled" {
		t.Fatalf("run now: %q %v", out, err)
	}
	out, err = runCmd(t, cenv, "run", "now", "--task", task.ID, "--idempotency-key", "e2e-1", "--json")
	var nowAgain adminapi.RunView
	if !errors.Is(err, app.ErrRunSkipped) || json.Unmarshal([]byte(out), &nowAgain) != nil || nowAgain.ID != now.ID || *nowAgain.Created {
		t.Fatalf("run now again: %q %v", out, err)
	}
	out, err = runCmd(t, cenv, "run", "now", "--task", task.ID, "--idempotency-key", "e2e-1")
	if !errors.Is(err, app.ErrRunSkipped) || out != "run "+now.ID+" (already requested with this idempotency key): skipped (concurrency_forbid: another run of the task is active)\n" {
		t.Fatalf("run now in text: %q %v", out, err)
	}
	var queuedID string
	for _, r := range runs.Items {
		if r.Status == "queued" {
			queuedID = r.ID
		}
	}
	out, err = runCmd(t, cenv, "run", "show", "--id", queuedID, "--json")
	if err != nil || !strings.Contains(out, `"reason": "no_live_session"`) {
		t.Fatalf("run show: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "run", "logs", "--id", queuedID); err != nil || out != "" {
		t.Fatalf("run logs: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "run", "cancel", "--id", queuedID); err != nil || out != "run "+queuedID+": cancelled\n" {
		t.Fatalf("run cancel: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "run", "logs", "-f", "--id", queuedID); err != nil || out != "" {
		t.Fatalf("run logs -f of a cancelled run: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "run", "list", "--task", task.ID, "--status", "cancelled", "--limit", "5"); err != nil || !strings.Contains(out, queuedID) {
		t.Fatalf("run list: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "worker", "show", "--id", "edge-1", "--json"); err != nil || strings.Contains(out, `"session"`) {
		t.Fatalf("worker show: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "trigger", "delete", "--task", task.ID, "--id", tick.ID); err != nil || !strings.HasPrefix(out, "deleted trigger "+tick.ID) {
		t.Fatalf("trigger delete: %q %v", out, err)
	}
	if out, err = runCmd(t, cenv, "task", "delete", "--id", task.ID); err != nil || !strings.HasPrefix(out, "deleted task "+task.ID) {
		t.Fatalf("task delete: %q %v", out, err)
	}
	if _, err = runCmd(t, cenv, "task", "get", "--id", task.ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("task get after delete: %v", err)
	}
}
