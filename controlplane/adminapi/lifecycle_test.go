package adminapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/sweep"
)

// req sends a request with extra headers and returns the response.
func (f fixture) req(method, path, body string, hdr map[string]string) *http.Response {
	f.t.Helper()
	r, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+f.token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestRunNowCancelAndWhyItWaits: run-now with an Idempotency-Key (same key
// → same Run, other body → 409), the queued Run explains why it waits (no
// live session, then a placement mismatch by category), cancel answers 202
// then 200 with one run.cancel_requested, and the admin role itself still
// cannot write runs.
func TestRunNowCancelAndWhyItWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	var task adminapi.Task
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"p"}`, nil), 201)
	mustStatus(t, "task", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":{"kind":"qinglong/command@v1",
		"shell":{"command":"echo hi"},"placement":{"required":{"os":"linux"}}}}`, &task), 201)

	var eb adminapi.ErrorBody
	mustStatus(t, "run-now without a key", f.call("POST", "/api/v1/tasks/"+task.ID+"/runs", nil, &eb), 400)
	resp := f.req("POST", "/api/v1/tasks/"+task.ID+"/runs", "", map[string]string{"Idempotency-Key": "k-1"})
	mustStatus(t, "run-now", resp.StatusCode, 201)
	var first adminapi.RunView
	decode(t, resp, &first)
	if first.Created == nil || !*first.Created || first.Status != "queued" || resp.Header.Get("Location") != "/api/v1/runs/"+first.ID {
		t.Fatalf("run-now %+v", first)
	}
	resp = f.req("POST", "/api/v1/tasks/"+task.ID+"/runs", "", map[string]string{"Idempotency-Key": "k-1"})
	mustStatus(t, "run-now again", resp.StatusCode, 200)
	var again adminapi.RunView
	decode(t, resp, &again)
	if again.ID != first.ID || again.Created == nil || *again.Created {
		t.Fatalf("run-now again %+v", again)
	}
	resp = f.req("POST", "/api/v1/tasks/"+task.ID+"/runs", `{"rerunOf":"`+first.ID+`"}`, map[string]string{"Idempotency-Key": "k-1"})
	mustStatus(t, "same key, other body", resp.StatusCode, 409)

	var got adminapi.RunView
	mustStatus(t, "get", f.call("GET", "/api/v1/runs/"+first.ID, nil, &got), 200)
	if got.Waiting == nil || got.Waiting.Reason != controlplane.WaitNoLiveSession || len(got.Attempts) != 1 {
		t.Fatalf("waiting %+v", got)
	}
	listReason(t, f, task.ID, first.ID, controlplane.WaitNoLiveSession)
	// A live session on the wrong OS: the Run is unplaceable, by category.
	su := f.db.Conn(t)
	var w controlplane.Worker
	mustStatus(t, "register", f.call("POST", "/api/v1/workers", `{"name":"w1"}`, &w), 201)
	if _, err := su.Exec(ctx, `INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity,
		capabilities, capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT gen_random_uuid(), $1::uuid, 1, 'online', 2, '{"os":"windows","arch":"amd64"}', sha256('x'), n, n + 60000, n, n
		FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS n) x`, w.ID); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, "get", f.call("GET", "/api/v1/runs/"+first.ID, nil, &got), 200)
	if got.Waiting == nil || got.Waiting.Reason != controlplane.WaitPlacement || got.Waiting.Mismatch["os"] != 1 {
		t.Fatalf("waiting %+v", got.Waiting)
	}
	listReason(t, f, task.ID, first.ID, controlplane.WaitPlacement)
	var wv adminapi.WorkerView
	mustStatus(t, "worker", f.call("GET", "/api/v1/workers/w1", nil, &wv), 200)
	if wv.Session == nil || wv.Session.Capacity != 2 || wv.Session.Expired || wv.Session.Status != "online" {
		t.Fatalf("worker %+v", wv)
	}

	resp = f.req("POST", "/api/v1/runs/"+first.ID+"/cancel", "", nil)
	mustStatus(t, "cancel", resp.StatusCode, 202)
	resp = f.req("POST", "/api/v1/runs/"+first.ID+"/cancel", "", nil)
	mustStatus(t, "cancel again", resp.StatusCode, 200)
	var cancelled adminapi.RunView
	decode(t, resp, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Fatalf("cancelled %+v", cancelled)
	}
	var n int
	if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.run_events WHERE run_id = $1 AND type = 'run.cancel_requested'`,
		first.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d cancel_requested events (%v)", n, err)
	}
	if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.audit_log WHERE action = 'run.cancel' AND subject_id = $1`,
		first.ID).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d cancel audit lines (%v)", n, err)
	}

	// The admin role reads runs but cannot write them; the port can.
	admin := f.db.Pool(t, postgres.RoleAdmin)
	if _, err := admin.Exec(ctx, `UPDATE ql3.runs SET priority = 1 WHERE run_id = $1`, first.ID); postgres.SQLState(err) != "42501" {
		t.Fatalf("admin UPDATE runs: %v", err)
	}
	if _, err := admin.Exec(ctx, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, created_at_ms)
		VALUES ($1, 99, $2, 'run.bogus', 1)`, first.ID, task.ProjectID); postgres.SQLState(err) != "42501" {
		t.Fatalf("admin INSERT run_events: %v", err)
	}

	mustStatus(t, "disable", f.call("POST", "/api/v1/workers/w1/disable", nil, &wv), 200)
	if wv.Status != "disabled" {
		t.Fatalf("disabled %+v", wv)
	}
}

// TestLogReadAndFollowEndsAtCompletion: a range read carries the edge's
// headers; a follow streams what arrives and ends once the Attempt ended.
func TestLogReadAndFollowEndsAtCompletion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	var task adminapi.Task
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"p"}`, nil), 201)
	mustStatus(t, "task", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":`+echoSpec+`}`, &task), 201)
	resp := f.req("POST", "/api/v1/tasks/"+task.ID+"/runs", "", map[string]string{"Idempotency-Key": "log"})
	mustStatus(t, "run-now", resp.StatusCode, 201)
	var run adminapi.RunView
	decode(t, resp, &run)
	su := f.db.Conn(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := su.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// The Attempt runs and has written "hello\n" (what dispatch's log
	// upload stores).
	exec(`UPDATE ql3.attempts SET status = 'running', started_at_ms = created_at_ms WHERE run_id = $1`, run.ID)
	exec(`UPDATE ql3.runs SET status = 'running' WHERE run_id = $1`, run.ID)
	exec(`INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms)
		VALUES ($1, 1, 'stdout', 0, $2, convert_to('hello'||chr(10), 'UTF8'), 1)`, run.ID, task.ProjectID)
	exec(`INSERT INTO ql3.run_log_streams (run_id, attempt, stream, project_id, length_bytes, stored_bytes, created_at_ms, updated_at_ms)
		VALUES ($1, 1, 'stdout', $2, 6, 6, 1, 1)`, run.ID, task.ProjectID)

	resp = f.req("GET", "/api/v1/runs/"+run.ID+"/log?offset=1&limit=3", "", nil)
	mustStatus(t, "range", resp.StatusCode, 200)
	body, _ := io.ReadAll(resp.Body)
	h := resp.Header
	if string(body) != "ell" || h.Get("X-Log-Offset") != "1" || h.Get("X-Log-Next-Offset") != "4" ||
		h.Get("X-Log-Size") != "6" || h.Get("X-Log-Complete") != "false" || h.Get("X-Log-Truncated") != "false" {
		t.Fatalf("range %q %v", body, h)
	}
	var eb adminapi.ErrorBody
	mustStatus(t, "bad stream", f.call("GET", "/api/v1/runs/"+run.ID+"/log?stream=stdin", nil, &eb), 400)
	if eb.Field != "stream" {
		t.Fatalf("error %+v", eb)
	}

	resp = f.req("GET", "/api/v1/runs/"+run.ID+"/attempts/1/log?follow=1", "", nil)
	mustStatus(t, "follow", resp.StatusCode, 200)
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	// More output, then the Attempt ends: the follow delivers it and ends.
	exec(`INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms)
		VALUES ($1, 1, 'stdout', 6, $2, convert_to('bye'||chr(10), 'UTF8'), 1)`, run.ID, task.ProjectID)
	exec(`UPDATE ql3.run_log_streams SET length_bytes = 10, stored_bytes = 10, closed = true WHERE run_id = $1`, run.ID)
	exec(`UPDATE ql3.attempts SET status = 'succeeded', finished_at_ms = started_at_ms + 1 WHERE run_id = $1`, run.ID)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "bye\n" {
		t.Fatalf("rest %q %v", rest, err)
	}
	if resp.Trailer.Get("X-Log-Complete") != "true" || resp.Trailer.Get("X-Log-Next-Offset") != "10" {
		t.Fatalf("trailers %v", resp.Trailer)
	}
}

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestCreateTaskWithTriggers: triggers given with a task are created in its
// transaction (edge parity); one bad trigger refuses the whole create and
// names its field.
func TestCreateTaskWithTriggers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"p"}`, nil), 201)
	var eb adminapi.ErrorBody
	mustStatus(t, "bad trigger", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":`+echoSpec+`,
		"triggers":[{"expression":"@hourly"},{"expression":"61 * * * *"}]}`, &eb), 400)
	if eb.Field != "triggers[1].expression" {
		t.Fatalf("error %+v", eb)
	}
	var tasks adminapi.List[controlplane.Task]
	mustStatus(t, "tasks", f.call("GET", "/api/v1/tasks?project=p", nil, &tasks), 200)
	if len(tasks.Items) != 0 {
		t.Fatalf("a refused create left %d tasks", len(tasks.Items))
	}
	var task adminapi.Task
	mustStatus(t, "create", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":`+echoSpec+`,
		"triggers":[{"expression":"@hourly","name":"hourly"},{"expression":"0 3 * * *","timeZone":"Europe/Berlin"}]}`, &task), 201)
	if len(task.Triggers) != 2 || task.Triggers[0].Name != "hourly" || task.Triggers[1].TimeZone != "Europe/Berlin" ||
		task.Triggers[0].TaskRevision != task.Revision {
		t.Fatalf("created %+v", task)
	}
	var got adminapi.Task
	mustStatus(t, "get", f.call("GET", "/api/v1/tasks/"+task.ID, nil, &got), 200)
	if len(got.Triggers) != 2 {
		t.Fatalf("task has %d triggers", len(got.Triggers))
	}
	mustStatus(t, "name taken by a trigger", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t2","spec":`+echoSpec+`,
		"triggers":[{"expression":"@hourly","name":"hourly"}]}`, &eb), 409)
}

// TestDeleteTaskAndTrigger: deleting a trigger disables its schedule and
// hides it; deleting a task hides it and its triggers, frees the names, and
// the next lifecycle sweep cancels its waiting Runs (edge parity).
func TestDeleteTaskAndTrigger(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	su := f.db.Conn(t)
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"p"}`, nil), 201)
	var task adminapi.Task
	mustStatus(t, "create", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":`+echoSpec+`,
		"triggers":[{"expression":"@hourly","name":"a"},{"expression":"@daily","name":"b"}]}`, &task), 201)
	resp := f.req("POST", "/api/v1/tasks/"+task.ID+"/runs", "", map[string]string{"Idempotency-Key": "before-delete"})
	mustStatus(t, "run-now", resp.StatusCode, 201)
	var run adminapi.RunView
	decode(t, resp, &run)

	trA := task.Triggers[0].ID
	mustStatus(t, "delete trigger", f.call("DELETE", "/api/v1/tasks/"+task.ID+"/triggers/"+trA, nil, nil), 204)
	var eb adminapi.ErrorBody
	mustStatus(t, "deleted trigger", f.call("GET", "/api/v1/tasks/"+task.ID+"/triggers/"+trA, nil, &eb), 404)
	var active bool
	if err := su.QueryRow(ctx, `SELECT active FROM ql3.trigger_schedules WHERE trigger_id = $1`, trA).Scan(&active); err != nil || active {
		t.Fatalf("deleted trigger's schedule active=%v (%v)", active, err)
	}
	var got adminapi.Task
	mustStatus(t, "task", f.call("GET", "/api/v1/tasks/"+task.ID, nil, &got), 200)
	if len(got.Triggers) != 1 || got.Triggers[0].Name != "b" {
		t.Fatalf("triggers after delete %+v", got.Triggers)
	}

	mustStatus(t, "delete task", f.call("DELETE", "/api/v1/tasks/"+task.ID, nil, nil), 204)
	mustStatus(t, "deleted task", f.call("GET", "/api/v1/tasks/"+task.ID, nil, &eb), 404)
	mustStatus(t, "delete again", f.call("DELETE", "/api/v1/tasks/"+task.ID, nil, &eb), 404)
	mustStatus(t, "trigger on a deleted task", f.call("POST", "/api/v1/tasks/"+task.ID+"/triggers", `{"expression":"@hourly"}`, &eb), 404)
	var tasks adminapi.List[controlplane.Task]
	mustStatus(t, "tasks", f.call("GET", "/api/v1/tasks?project=p", nil, &tasks), 200)
	if len(tasks.Items) != 0 {
		t.Fatalf("deleted task listed: %+v", tasks.Items)
	}
	var n int
	if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.trigger_schedules s JOIN ql3.triggers tr USING (trigger_id)
		WHERE tr.task_id = $1 AND s.active`, task.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d active schedules of a deleted task (%v)", n, err)
	}
	// The names are free again.
	mustStatus(t, "same name", f.call("POST", "/api/v1/tasks", `{"project":"p","name":"t","spec":`+echoSpec+`,
		"triggers":[{"expression":"@hourly","name":"a"}]}`, nil), 201)

	// The queued Run of the deleted task is cancelled by the next sweep.
	if _, err := sweep.Sweep(ctx, f.db.Pool(t, postgres.RoleRuntime), controlplane.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	var status, reason, evReason string
	if err := su.QueryRow(ctx, `SELECT r.status, r.cancel_reason, e.payload->>'reason' FROM ql3.runs r
		JOIN ql3.run_events e ON e.run_id = r.run_id AND e.type = 'run.cancelled' WHERE r.run_id = $1`, run.ID).
		Scan(&status, &reason, &evReason); err != nil || status != "cancelled" || reason != "shutdown" || evReason != "task_deleted" {
		t.Fatalf("run of the deleted task: %s %s %s (%v)", status, reason, evReason, err)
	}
}

// listReason checks the run list's row of runID carries the wait reason.
func listReason(t *testing.T, f fixture, taskID, runID, want string) {
	t.Helper()
	var page adminapi.List[adminapi.RunListItem]
	mustStatus(t, "list", f.call("GET", "/api/v1/runs?task="+taskID, nil, &page), 200)
	for _, it := range page.Items {
		if it.ID == runID {
			if it.WaitReason != want {
				t.Fatalf("list row %s: waitReason %q, want %q", runID, it.WaitReason, want)
			}
			return
		}
	}
	t.Fatalf("run %s not in the list (%d rows)", runID, len(page.Items))
}
