package adminapi_test

import (
	"reflect"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/panel"
)

// The admin API's route table: what the document says each route takes
// and answers. A new route must be added here (then `go test ./adminapi
// -run TestOpenAPIDocumentUpToDate -update`): TestOpenAPIRoutesMatchMux
// holds the table to the mux, TestOpenAPIExamples to the handlers.

func errResp(desc string) openapi.Response {
	return openapi.Response{Description: desc, Body: adminapi.ErrorBody{}}
}

func withErrors(r map[int]openapi.Response, extra ...int) map[int]openapi.Response {
	r[400] = errResp("invalid input: code, message and the field at fault")
	r[401] = errResp("missing, wrong, expired or revoked API token")
	r[403] = errResp("cross-origin change refused")
	r[500] = errResp("internal error (details only in the server log)")
	for _, c := range extra {
		switch c {
		case 404:
			r[404] = errResp("no such project, task, trigger, run, worker or credential")
		case 409:
			r[409] = errResp("conflict: stale expectedRevision/expectedVersion, a name in use, a mutationId reused for another request")
		case 413:
			r[413] = errResp("request body too large")
		case 503:
			r[503] = errResp("not configured on this server, or not ready")
		}
	}
	return r
}

func adminRoutes() []openapi.Route {
	page := []openapi.Param{openapi.Query("limit", "integer", "page size"), openapi.Query("cursor", "string", "nextCursor of the previous page")}
	project := []openapi.Param{openapi.PathParam("project", "project id or name")}
	task := []openapi.Param{openapi.PathParam("task", "task id")}
	trig := []openapi.Param{openapi.PathParam("task", "task id"), openapi.PathParam("trigger", "trigger id")}
	run := []openapi.Param{openapi.PathParam("run", "run id")}
	worker := []openapi.Param{openapi.PathParam("worker", "worker id or name")}
	envID := []openapi.Param{openapi.PathParam("project", "project id or name"), openapi.PathParam("id", "env entry id")}
	logParams := []openapi.Param{openapi.Query("stream", "string", "stdout | stderr"), openapi.Query("offset", "integer", "first byte"),
		openapi.Query("limit", "integer", "bytes"), openapi.Query("follow", "string", "1: stream until the attempt ends")}
	logResp := withErrors(map[int]openapi.Response{200: {Description: "output bytes", ContentType: "text/plain"}}, 404, 503)
	return append([]openapi.Route{
		{Method: "GET", Path: "/healthz", Summary: "liveness (no credential)", Responses: openapi.OK("alive", adminapi.Health{})},
		{Method: "GET", Path: "/readyz", Summary: "readiness: the database is reachable and its schema is this binary's (no credential)", Responses: map[int]openapi.Response{
			200: {Description: "ready", Body: adminapi.Health{}}, 503: {Description: "not ready (the reason names versions, never data)", Body: adminapi.Health{}}}},
		{Method: "GET", Path: adminapi.MetricsPath, Summary: "Prometheus text exposition (loopback without a token, else an API token)", Responses: map[int]openapi.Response{
			200: {Description: "metrics", ContentType: "text/plain"},
			401: errResp("missing or wrong API token"),
			503: {Description: "a collector failed", ContentType: "text/plain"}}},
		{Method: "GET", Path: adminapi.OpenAPIPath, Summary: "this document", Responses: withErrors(openapi.OK("the OpenAPI 3.1 document", map[string]any{}))},

		{Method: "GET", Path: httpkit.SessionPath, Summary: "panel session state", Responses: withErrors(openapi.OK("session", httpkit.SessionStatus{}))},
		{Method: "POST", Path: httpkit.SessionPath, Summary: "sign in with an API token: sets an HttpOnly session cookie", Request: httpkit.SignInRequest{},
			Responses: withErrors(openapi.OK("signed in", httpkit.SessionStatus{}), 413)},
		{Method: "DELETE", Path: httpkit.SessionPath, Summary: "sign out", Responses: withErrors(map[int]openapi.Response{204: {Description: "signed out"}})},
		{Method: "GET", Path: panel.PreviewPath, Summary: "next fire times of a cron expression in a zone, gaps and repeats marked",
			Params: []openapi.Param{openapi.Query("expression", "string", "cron expression"), openapi.Query("timeZone", "string", "IANA zone (default UTC)"),
				openapi.Query("count", "integer", "fire times"), openapi.Query("afterMs", "integer", "start after (epoch ms; default now)")},
			Responses: withErrors(openapi.OK("fire times", panel.PreviewResponse{}))},

		{Method: "GET", Path: "/api/v1/projects", Summary: "list projects", Params: page, Responses: withErrors(openapi.OK("a page", adminapi.List[adminapi.ProjectRecord]{}))},
		{Method: "POST", Path: "/api/v1/projects", Summary: "create a project", Request: adminapi.CreateProjectRequest{},
			Responses: withErrors(openapi.Created("created", adminapi.ProjectRecord{}), 409, 413)},
		{Method: "GET", Path: "/api/v1/projects/{project}", Summary: "one project", Params: project, Responses: withErrors(openapi.OK("project", adminapi.ProjectRecord{}), 404)},
		{Method: "POST", Path: "/api/v1/projects/{project}/archive", Summary: "archive (expectedVersion)", Params: project, Request: adminapi.ArchiveProjectRequest{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("archived", adminapi.ProjectRecord{}), 404, 409, 413)},

		{Method: "GET", Path: "/api/v1/tasks", Summary: "list tasks", Params: append(page, openapi.Query("project", "string", "project id or name"),
			openapi.Query("q", "string", "a substring of the name, the command or a label (1..128 characters)"),
			openapi.Query("label", "string", "exactly this label"), openapi.Query("enabled", "boolean", "only enabled (true) or disabled (false) tasks")),
			Responses: withErrors(openapi.OK("a page and the number of tasks the filter selects", adminapi.TaskList{}))},
		{Method: "POST", Path: "/api/v1/tasks", Summary: "create a task (and its triggers)", Request: adminapi.CreateTaskRequest{},
			Responses: withErrors(openapi.Created("created", adminapi.Task{}), 409, 413)},
		{Method: "GET", Path: "/api/v1/tasks/{task}", Summary: "one task with its triggers", Params: task, Responses: withErrors(openapi.OK("task", adminapi.Task{}), 404)},
		{Method: "PUT", Path: "/api/v1/tasks/{task}", Summary: "update (expectedRevision): a new revision", Params: task, Request: adminapi.UpdateTaskRequest{},
			Responses: withErrors(openapi.OK("updated", adminapi.Task{}), 404, 409, 413)},
		{Method: "PATCH", Path: "/api/v1/tasks/{task}", Summary: "enable or disable, or replace the labels", Params: task, Request: adminapi.PatchTaskRequest{},
			Responses: withErrors(openapi.OK("updated", adminapi.Task{}), 404, 409, 413)},
		{Method: "POST", Path: "/api/v1/tasks/{task}/enable", Summary: "enable", Params: task, Request: adminapi.EnableRequest{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("enabled", adminapi.Task{}), 404, 409, 413)},
		{Method: "POST", Path: "/api/v1/tasks/{task}/disable", Summary: "disable", Params: task, Request: adminapi.EnableRequest{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("disabled", adminapi.Task{}), 404, 409, 413)},
		{Method: "GET", Path: "/api/v1/tasks/{task}/triggers", Summary: "the task's triggers", Params: append(task, page...),
			Responses: withErrors(openapi.OK("a page", adminapi.List[adminapi.Trigger]{}), 404)},
		{Method: "POST", Path: "/api/v1/tasks/{task}/triggers", Summary: "add a trigger", Params: task, Request: adminapi.TriggerRequest{},
			Responses: withErrors(openapi.Created("created", adminapi.Trigger{}), 404, 409, 413)},
		{Method: "GET", Path: "/api/v1/tasks/{task}/triggers/{trigger}", Summary: "one trigger", Params: trig, Responses: withErrors(openapi.OK("trigger", adminapi.Trigger{}), 404)},
		{Method: "PUT", Path: "/api/v1/tasks/{task}/triggers/{trigger}", Summary: "update (expectedRevision)", Params: trig, Request: adminapi.UpdateTriggerRequest{},
			Responses: withErrors(openapi.OK("updated", adminapi.Trigger{}), 404, 409, 413)},
		{Method: "DELETE", Path: "/api/v1/tasks/{task}", Summary: "delete a task and its triggers (waiting runs are cancelled by the next sweep, running ones finish)",
			Params:    append(task, openapi.Query("mutationId", "string", "retry-safe id: a repeat answers the same")),
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409)},
		{Method: "DELETE", Path: "/api/v1/tasks/{task}/triggers/{trigger}", Summary: "delete a trigger",
			Params:    append(trig, openapi.Query("mutationId", "string", "retry-safe id: a repeat answers the same")),
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409)},

		{Method: "POST", Path: "/api/v1/tasks/{task}/runs", Summary: "run now (Idempotency-Key header or body idempotencyKey; rerunOf)",
			Params:  append(task, openapi.Param{Name: "Idempotency-Key", In: "header", Type: "string", Description: "retry-safe key"}),
			Request: adminapi.RunNowRequest{}, RequestOptional: true,
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: adminapi.RunView{}},
				200: {Description: "the Run this key already made", Body: adminapi.RunView{}}}, 404, 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/runs", Summary: "list runs, newest first; waitReason says why one has not started",
			Params: append(page, openapi.Query("project", "string", "project id or name"), openapi.Query("task", "string", "task id"), openapi.Query("trigger", "string", "trigger id"),
				openapi.Query("status", "string", "statuses, comma-separated"), openapi.Query("origin", "string", "cron | manual | rerun")),
			Responses: withErrors(openapi.OK("a page", adminapi.List[adminapi.RunListItem]{}))},
		{Method: "GET", Path: "/api/v1/runs/{run}", Summary: "one run with its attempts; waiting says why it has not started", Params: run,
			Responses: withErrors(openapi.OK("run", adminapi.RunView{}), 404)},
		{Method: "GET", Path: "/api/v1/runs/{run}/events", Summary: "the run's events",
			Params:    append(run, openapi.Query("after", "integer", "events after this seq"), openapi.Query("limit", "integer", "events"), openapi.Query("cursor", "string", "unused: pass nextCursor as after")),
			Responses: withErrors(openapi.OK("events; nextCursor is the ?after= of the next page", adminapi.List[adminapi.RunEventRecord]{}), 404)},
		{Method: "POST", Path: "/api/v1/runs/{run}/cancel", Summary: "cancel", Params: run, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(map[int]openapi.Response{202: {Description: "asked now", Body: adminapi.RunView{}},
				200: {Description: "already asked, or finished", Body: adminapi.RunView{}}}, 404, 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/runs/{run}/log", Summary: "output of the newest (or ?attempt=) attempt",
			Params: append(append(run, openapi.Query("attempt", "integer", "attempt number")), logParams...), Responses: logResp},
		{Method: "GET", Path: "/api/v1/runs/{run}/attempts/{n}/log", Summary: "output of attempt n",
			Params: append(append(run, openapi.Param{Name: "n", In: "path", Type: "integer", Required: true, Description: "attempt number"}), logParams...), Responses: logResp},

		{Method: "GET", Path: "/api/v1/workers", Summary: "list workers with their newest session", Params: page,
			Responses: withErrors(openapi.OK("a page", adminapi.List[adminapi.WorkerView]{}))},
		{Method: "POST", Path: "/api/v1/workers", Summary: "register a worker", Request: adminapi.RegisterWorkerRequest{},
			Responses: withErrors(openapi.Created("registered", adminapi.WorkerRecord{}), 409, 413)},
		{Method: "GET", Path: "/api/v1/workers/{worker}", Summary: "one worker with its newest session", Params: worker,
			Responses: withErrors(openapi.OK("worker", adminapi.WorkerView{}), 404)},
		{Method: "POST", Path: "/api/v1/workers/{worker}/disable", Summary: "disable a worker and revoke its credentials", Params: worker, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("disabled", adminapi.WorkerView{}), 404, 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/workers/{worker}/credentials", Summary: "credentials (never secrets or digests)", Params: worker,
			Responses: withErrors(openapi.OK("credentials", adminapi.List[controlplane.WorkerCredential]{}), 404)},
		{Method: "POST", Path: "/api/v1/workers/{worker}/credentials", Summary: "issue a credential: its text is in this response only", Params: worker, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(openapi.Created("issued", adminapi.IssuedCredential{}), 404, 409, 413)},
		{Method: "POST", Path: "/api/v1/workers/{worker}/credentials/rotate", Summary: "issue a new credential, retire the others after graceMs", Params: worker,
			Request: adminapi.RotateCredentialsRequest{}, RequestOptional: true,
			Responses: withErrors(openapi.Created("issued", adminapi.IssuedCredential{}), 404, 409, 413)},
		{Method: "POST", Path: "/api/v1/workers/{worker}/credentials/{credential}/revoke", Summary: "revoke a credential",
			Params: append(worker, openapi.PathParam("credential", "credential id")), Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("revoked", controlplane.WorkerCredential{}), 404, 409, 413)},

		// A project's env store (ADR 0051): the edge's /api/v1/envs shapes.
		{Method: "GET", Path: "/api/v1/projects/{project}/envs", Summary: "list a project's env entries, never values",
			Params:    append(append([]openapi.Param{}, project...), append(page, openapi.Query("q", "string", "substring of the name or remarks"))...),
			Responses: withErrors(openapi.OK("a page", adminapi.EnvList{}), 404, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs", Summary: "create an env entry (value write-only)", Params: project, Request: adminapi.CreateEnvRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: adminapi.EnvEntry{}}}, 404, 413, 503)},
		{Method: "GET", Path: "/api/v1/projects/{project}/envs/{id}", Summary: "one env entry without its value", Params: envID,
			Responses: withErrors(openapi.OK("the entry", adminapi.EnvEntry{}), 404, 503)},
		{Method: "PATCH", Path: "/api/v1/projects/{project}/envs/{id}", Summary: "change fields of an env entry", Params: envID, Request: adminapi.PatchEnvRequest{},
			Responses: withErrors(openapi.OK("the entry", adminapi.EnvEntry{}), 404, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/projects/{project}/envs/{id}", Summary: "delete an env entry", Params: envID,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs/{id}/enable", Summary: "enable an env entry", Params: envID, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("the entry", adminapi.EnvEntry{}), 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs/{id}/disable", Summary: "disable an env entry", Params: envID, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("the entry", adminapi.EnvEntry{}), 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs/{id}/move", Summary: "place before another entry (\"\" = last)", Params: envID, Request: adminapi.MoveEnvRequest{},
			Responses: withErrors(openapi.OK("the entry", adminapi.EnvEntry{}), 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs/{id}/reveal", Summary: "the value of one entry (audited)", Params: envID, Request: struct{}{}, RequestOptional: true,
			Responses: withErrors(openapi.OK("the entry and its value", adminapi.EnvValue{}), 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs/import", Summary: "create entries from NAME=value lines or JSON, all or none", Params: project, Request: adminapi.ImportEnvRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: adminapi.ImportEnvResponse{}}}, 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/projects/{project}/envs/export", Summary: "every entry as JSON or NAME=value lines (values audited)", Params: project, Request: adminapi.ExportEnvRequest{},
			Responses: withErrors(openapi.OK("the export", adminapi.EnvExport{}), 404, 413, 503)},

		{Method: "GET", Path: "/api/v1/audit", Summary: "audit lines, newest first",
			Params:    append(page, openapi.Query("action", "string", "action"), openapi.Query("subject", "string", "subject id"), openapi.Query("actor", "string", "actor id")),
			Responses: withErrors(openapi.OK("a page", adminapi.List[controlplane.AuditRecord]{}))},

		{Method: "GET", Path: "/api/v1/overview", Summary: "overview: live tasks, runs by status, failures of the last 24 h, the next fires, workers online",
			Params:    []openapi.Param{openapi.Query("project", "string", "project id or name")},
			Responses: withErrors(openapi.OK("the overview", controlplane.Overview{}), 404)},
		{Method: "GET", Path: "/api/v1/apps", Summary: "QingLong Open API apps (never secrets or digests)",
			Params:    []openapi.Param{openapi.Query("project", "string", "project id or name")},
			Responses: withErrors(openapi.OK("every app", adminapi.List[controlplane.OpenApp]{}), 404, 503)},
		{Method: "POST", Path: "/api/v1/apps", Summary: "create an Open API app of a project: the client secret is in this response only",
			Request: adminapi.CreateAppRequest{}, Responses: withErrors(openapi.Created("created", adminapi.CreatedApp{}), 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/apps/{app}", Summary: "delete an app (its tokens end with it)",
			Params:    []openapi.Param{openapi.PathParam("app", "app id")},
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 503)},
	}, append(append(append(append(scriptRoutes(), notifyRoutes()...), append(tokenRoutes(), userRoutes()...)...), viewRoutes()...), append(subscriptionRoutes(), append(depRoutes(), importRoutes()...)...)...)...) // openapi_subs_test.go, openapi_scripts_test.go, openapi_notify_test.go, openapi_access_test.go, openapi_views_test.go, openapi_deps_test.go, openapi_import_test.go
}

func adminGenerator() *openapi.Generator {
	cmd := reflect.TypeOf(spec.Command{})
	return &openapi.Generator{
		Title:   "ql3-control admin API",
		Version: "v1",
		Description: "The control plane's admin API: the edge API's shapes plus the cluster's own fields. " +
			"Every route but health needs Authorization: Bearer <API token> (or the panel's session cookie); " +
			"errors are {code, message, field}. Publications accept an optional mutationId: an identical retry returns the original result.",
		FieldTypes: map[string]reflect.Type{
			"CreateTaskRequest.spec": cmd, "UpdateTaskRequest.spec": cmd,
			// The records' nested records, under this API's names (same JSON).
			"Trigger.schedule": reflect.TypeOf(adminapi.ScheduleRecord{}), "TriggerRecord.schedule": reflect.TypeOf(adminapi.ScheduleRecord{}),
			"RunView.attempts": reflect.TypeOf([]adminapi.AttemptRecord{}), "RunListItem.attempts": reflect.TypeOf([]adminapi.AttemptRecord{}),
			"RunRecord.attempts": reflect.TypeOf([]adminapi.AttemptRecord{}),
			"Task.triggers":      reflect.TypeOf([]adminapi.Trigger{}),
		},
		Enums: map[string][]string{
			"Body.code": {errs.Invalid, errs.Unauthorized, errs.Forbidden, errs.NotFound, errs.Conflict, errs.TooLarge, errs.Unavailable, errs.Internal},
		},
	}
}
