package httpapi

import (
	"encoding/json"
	"reflect"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/panel"
)

// The edge API's route table: what the document says each route takes and
// answers. TestOpenAPIRoutesMatchMux holds it to the mux, the recorded
// examples hold it to the handlers, TestOpenAPIDocumentUpToDate to the
// committed openapi.json.

func errResp(desc string) openapi.Response {
	return openapi.Response{Description: desc, Body: ErrorBody{}}
}

// withErrors adds the answers every API route may give.
func withErrors(r map[int]openapi.Response, extra ...int) map[int]openapi.Response {
	r[400] = errResp("invalid input: code, message and the field at fault")
	r[401] = errResp("missing or wrong admin token")
	r[403] = errResp("refused by the request policy: cross-origin change, or a non-loopback request under --no-auth")
	r[500] = errResp("internal error (details only in the server log)")
	for _, c := range extra {
		switch c {
		case 404:
			r[404] = errResp("no such task, trigger, run or attempt")
		case 409:
			r[409] = errResp("conflict: stale expectedRevision, a name in use, or a state that forbids the change")
		case 413:
			r[413] = errResp("request body too large")
		case 503:
			r[503] = errResp("not ready")
		}
	}
	return r
}

var (
	taskParam    = openapi.PathParam("task", "task id, or the name of a live task")
	triggerParam = openapi.PathParam("trigger", "trigger id")
	runParam     = openapi.PathParam("run", "run id")
	pageParams   = []openapi.Param{openapi.Query("limit", "integer", "page size (1..100)"), openapi.Query("cursor", "string", "nextCursor of the previous page")}
)

func edgeRoutes() []openapi.Route {
	task := []openapi.Param{taskParam}
	trig := []openapi.Param{taskParam, triggerParam}
	run := []openapi.Param{runParam}
	return append([]openapi.Route{
		{Method: "GET", Path: "/healthz", Summary: "liveness (no credential)", Responses: openapi.OK("alive", Health{})},
		{Method: "GET", Path: "/readyz", Summary: "readiness (no credential)", Responses: map[int]openapi.Response{
			200: {Description: "ready", Body: Health{}}, 503: {Description: "not ready", Body: Health{}}}},
		{Method: "GET", Path: "/metrics", Summary: "Prometheus text exposition (loopback, or the admin token)", Responses: map[int]openapi.Response{
			200: {Description: "metrics", ContentType: "text/plain"},
			401: errResp("missing or wrong admin token"),
			503: {Description: "a collector failed", ContentType: "text/plain"}}},
		{Method: "GET", Path: OpenAPIPath, Summary: "this document", Responses: withErrors(openapi.OK("the OpenAPI 3.1 document", map[string]any{}))},

		{Method: "GET", Path: httpkit.SessionPath, Summary: "panel session state", Responses: withErrors(openapi.OK("session", httpkit.SessionStatus{}))},
		{Method: "POST", Path: httpkit.SessionPath, Summary: "sign in with the admin token: sets an HttpOnly session cookie", Request: httpkit.SignInRequest{},
			Responses: withErrors(openapi.OK("signed in", httpkit.SessionStatus{}), 413)},
		{Method: "DELETE", Path: httpkit.SessionPath, Summary: "sign out", Responses: withErrors(map[int]openapi.Response{204: {Description: "signed out"}})},
		{Method: "GET", Path: panel.PreviewPath, Summary: "next fire times of a cron expression in a zone, gaps and repeats marked",
			Params: []openapi.Param{openapi.Query("expression", "string", "cron expression"), openapi.Query("timeZone", "string", "IANA zone (default UTC)"),
				openapi.Query("count", "integer", "fire times (1..10)"), openapi.Query("afterMs", "integer", "start after (epoch ms; default now)")},
			Responses: withErrors(openapi.OK("fire times", panel.PreviewResponse{}))},

		{Method: "GET", Path: "/api/v1/tasks", Summary: "list tasks, oldest first, each with its triggers and newest run",
			Params: append(pageParams, openapi.Query("deleted", "boolean", "include deleted tasks"),
				openapi.Query("q", "string", "substring of the name, the command or a label (ASCII case-insensitive)"),
				openapi.Query("label", "string", "tasks with this label"), openapi.Query("enabled", "boolean", "enabled or disabled tasks only")),
			Responses: withErrors(openapi.OK("a page of tasks and how many the filter selects", TaskList{}))},
		{Method: "POST", Path: "/api/v1/tasks", Summary: "create a task (and its triggers)", Request: CreateTaskRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: Task{}}}, 409, 413)},
		{Method: "GET", Path: "/api/v1/tasks/{task}", Summary: "one task with its triggers", Params: task, Responses: withErrors(openapi.OK("task", Task{}), 404)},
		{Method: "PUT", Path: "/api/v1/tasks/{task}", Summary: "update (expectedRevision): a new revision", Params: task, Request: UpdateTaskRequest{},
			Responses: withErrors(openapi.OK("updated", Task{}), 404, 409, 413)},
		{Method: "PATCH", Path: "/api/v1/tasks/{task}", Summary: "enable or disable, or replace the labels", Params: task, Request: PatchTaskRequest{},
			Responses: withErrors(openapi.OK("updated", Task{}), 404, 409, 413)},
		{Method: "POST", Path: "/api/v1/tasks/{task}/enable", Summary: "enable", Params: task, Responses: withErrors(openapi.OK("enabled", Task{}), 404, 409)},
		{Method: "POST", Path: "/api/v1/tasks/{task}/disable", Summary: "disable", Params: task, Responses: withErrors(openapi.OK("disabled", Task{}), 404, 409)},
		{Method: "DELETE", Path: "/api/v1/tasks/{task}", Summary: "delete (its history stays)", Params: task,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409)},

		{Method: "GET", Path: "/api/v1/tasks/{task}/triggers", Summary: "the task's triggers", Params: task, Responses: withErrors(openapi.OK("triggers", List[Trigger]{}), 404)},
		{Method: "POST", Path: "/api/v1/tasks/{task}/triggers", Summary: "add a trigger", Params: task, Request: TriggerRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: Trigger{}}}, 404, 409, 413)},
		{Method: "GET", Path: "/api/v1/tasks/{task}/triggers/{trigger}", Summary: "one trigger", Params: trig, Responses: withErrors(openapi.OK("trigger", Trigger{}), 404)},
		{Method: "PUT", Path: "/api/v1/tasks/{task}/triggers/{trigger}", Summary: "update (expectedRevision)", Params: trig, Request: UpdateTriggerRequest{},
			Responses: withErrors(openapi.OK("updated", Trigger{}), 404, 409, 413)},
		{Method: "DELETE", Path: "/api/v1/tasks/{task}/triggers/{trigger}", Summary: "delete a trigger", Params: trig,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409)},

		{Method: "POST", Path: "/api/v1/tasks/{task}/runs", Summary: "run now (Idempotency-Key header or body idempotencyKey)",
			Params:  append(task, openapi.Param{Name: "Idempotency-Key", In: "header", Type: "string", Description: "retry-safe key (printable ASCII)"}),
			Request: RunNowRequest{}, RequestOptional: true,
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: Run{}}, 200: {Description: "the Run this key already made", Body: Run{}}}, 404, 409, 413)},
		{Method: "GET", Path: "/api/v1/runs", Summary: "list runs, newest first",
			Params: append(pageParams, openapi.Query("task", "string", "task id or name"), openapi.Query("trigger", "string", "trigger id"),
				openapi.Query("status", "string", "statuses, comma-separated"), openapi.Query("origin", "string", "schedule | manual")),
			Responses: withErrors(openapi.OK("a page of runs", List[Run]{}))},
		{Method: "GET", Path: "/api/v1/runs/{run}", Summary: "one run with its attempts", Params: run, Responses: withErrors(openapi.OK("run", Run{}), 404)},
		{Method: "GET", Path: "/api/v1/runs/{run}/events", Summary: "the run's events",
			Params:    append(run, openapi.Query("after", "integer", "events after this seq"), openapi.Query("limit", "integer", "events (1..100)")),
			Responses: withErrors(openapi.OK("events; nextCursor is the ?after= of the next page", List[RunEvent]{}), 404)},
		{Method: "POST", Path: "/api/v1/runs/{run}/cancel", Summary: "cancel", Params: run, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(map[int]openapi.Response{202: {Description: "asked: the runner is stopping the process", Body: Run{}},
				200: {Description: "already finished", Body: Run{}}}, 404, 409, 413)},
		{Method: "GET", Path: "/api/v1/runs/{run}/attempts/{n}/log", Summary: "an attempt's output bytes",
			Params: append(run, openapi.Param{Name: "n", In: "path", Type: "integer", Required: true, Description: "attempt number"},
				openapi.Query("offset", "integer", "first byte"), openapi.Query("limit", "integer", "bytes"), openapi.Query("follow", "boolean", "stream until the attempt ends")),
			Responses: withErrors(map[int]openapi.Response{200: {Description: "output bytes (X-Log-Size, X-Log-Truncated headers)", ContentType: "text/plain"}}, 404)},
	}, append(append(append(append(append(append(envRoutes(), notifyRoutes()...), accessRoutes()...), findRoutesDoc()...), scriptRoutes()...), subsRoutesDoc()...), importRoutesDoc()...)...) // openapi_envs_test.go, openapi_notify_test.go, openapi_access_test.go, openapi_find_test.go, openapi_scripts_test.go, openapi_subs_test.go, openapi_import_test.go
}

func edgeGenerator() *openapi.Generator {
	return &openapi.Generator{
		Title:       "ql3-edge API",
		Version:     "v1",
		Description: "The single-node scheduler's JSON API. Errors are {code, message, field}. Everything needs Authorization: Bearer <admin token>, a scoped API token whose scopes allow the request (ADR 0049), or the panel's session cookie, except the health probes and, from a loopback peer, /metrics, this document and the schedule preview (ADR 0039). Env values are never listed: reveal and an export with values return them, audited (ADR 0038).",
		Substitute:  map[reflect.Type]reflect.Type{reflect.TypeOf(json.RawMessage(nil)): reflect.TypeOf(spec.Command{})},
		Enums: map[string][]string{
			"Run.status":      {"created", "queued", "dispatching", "running", "retry_wait", "lost", "succeeded", "failed", "cancelled", "timed_out"},
			"Run.origin":      {"schedule", "manual"},
			"Body.code":       {errs.Invalid, errs.Unauthorized, errs.Forbidden, errs.NotFound, errs.Conflict, errs.TooLarge, errs.Unavailable, errs.Internal},
			"Trigger.misfire": {"skip", "fire_once"},
		},
	}
}
