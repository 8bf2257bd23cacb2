package adminapi_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/depapi"
	"github.com/ql3/ql3/core/openapi"
)

// depRoutes is the dependencies' part of the route table (deps.go).
func depRoutes() []openapi.Route {
	const base = "/api/v1/projects/{project}/dependencies"
	proj := openapi.PathParam("project", "project id or name")
	one := []openapi.Param{proj, openapi.PathParam("id", "dependency id")}
	kind := []openapi.Param{proj, openapi.PathParam("kind", "node | python | linux")}
	action := func(a, summary string) openapi.Route {
		return openapi.Route{Method: "POST", Path: base + "/{id}/" + a, Summary: summary, Params: one,
			Responses: withErrors(openapi.Created("the Runs started, one per matching online worker", depapi.DependencyAction{}), 404, 409, 413, 503)}
	}
	return []openapi.Route{
		{Method: "GET", Path: base, Summary: "a project's dependencies with what each worker has installed",
			Params:    []openapi.Param{proj, openapi.Query("kind", "string", "node | python | linux")},
			Responses: withErrors(openapi.OK("every dependency", depapi.DependencyList{}), 404, 503)},
		{Method: "POST", Path: base, Summary: "record a dependency and install it on every online worker its placement labels select (none yet: recorded only)",
			Params: []openapi.Param{proj}, Request: depapi.DependencyRequest{},
			Responses: withErrors(openapi.Created("recorded, with the Runs started", depapi.DependencyAction{}), 404, 409, 413, 503)},
		{Method: "GET", Path: base + "/{id}", Summary: "one dependency with its per-worker installs", Params: one,
			Responses: withErrors(openapi.OK("the dependency", depapi.Dependency{}), 404, 503)},
		{Method: "DELETE", Path: base + "/{id}", Summary: "forget a dependency and its system tasks (nothing is uninstalled: remove does that)", Params: one,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "forgotten"}}, 404, 503)},
		action("install", "install on every matching online worker: one Run each"),
		action("reinstall", "reinstall on every matching online worker: one Run each"),
		action("remove", "uninstall on every matching online worker: one Run each"),
		{Method: "POST", Path: base + "/{id}/cancel", Summary: "cancel the action's Runs that have not ended", Params: one,
			Responses: withErrors(openapi.OK("the Runs cancelled", depapi.DependencyAction{}), 404, 409, 503)},
		{Method: "GET", Path: base + "/settings/{kind}", Summary: "a kind's registry (mirror) and proxy in the project", Params: kind,
			Responses: withErrors(openapi.OK("the settings", controlplane.DependencySettings{}), 404, 503)},
		{Method: "PUT", Path: base + "/settings/{kind}", Summary: "set a kind's registry (mirror; file:///dir is a local wheel folder) and proxy", Params: kind,
			Request:   controlplane.DependencySettings{},
			Responses: withErrors(openapi.OK("saved", controlplane.DependencySettings{}), 404, 413, 503)},
	}
}

// exerciseDeps sends the dependencies' requests (project "ops"); exec runs
// SQL as the superuser (a worker's live session with a label).
func exerciseDeps(t *testing.T, f fixture, id func(method, path, body string) string, exec func(sql string, args ...any)) {
	t.Helper()
	base := "/api/v1/projects/ops/dependencies"
	create := func(body string, runs int) string {
		var v depapi.DependencyAction
		if code := f.call("POST", base, body, &v); code != 201 || v.Dependency.ID == "" || len(v.Runs) != runs {
			t.Fatalf("create %s: %d %+v (want %d runs)", body, code, v, runs)
		}
		if runs > 0 && (v.Runs[0].WorkerName != "dep-worker" || len(v.Dependency.Installs) != 1 || v.Dependency.Status != controlplane.DepStatusInstalling) {
			t.Fatalf("create %s: %+v", body, v)
		}
		return v.Dependency.ID
	}
	f.call("PUT", base+"/settings/node", `{"kind":"node","registry":"http://127.0.0.1:4873/","proxy":""}`, nil)
	f.call("PUT", base+"/settings/node", `{"kind":"node","registry":"ftp://x"}`, nil)
	f.call("GET", base+"/settings/node", nil, nil)
	lonely := create(`{"kind":"python","name":"requests","labels":{"zone":"nowhere"}}`, 0)
	f.call("POST", base+"/"+lonely+"/install", "", nil) // 409: no worker has zone=nowhere
	f.call("POST", base+"/"+lonely+"/cancel", "", nil)  // 409: nothing running
	wk := id("POST", "/api/v1/workers", `{"name":"dep-worker"}`)
	exec(`INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities, capabilities_digest,
		heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
		SELECT gen_random_uuid(), $1::uuid, 1, 'online', 2, '{"labels":{"zone":"a"}}', sha256('x'), n.ms, n.ms + 600000, n.ms, n.ms
		FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) n`, wk)
	d := create(`{"kind":"node","name":"ql3-tiny","version":"^1.0.0","labels":{"zone":"a"}}`, 1)
	f.call("POST", base, `{"kind":"node","name":"Bad Name"}`, nil)
	f.call("POST", base+"/"+d+"/reinstall", "", nil) // 409: the install runs
	f.call("GET", base, nil, nil)
	f.call("GET", base+"?kind=node", nil, nil)
	f.call("GET", base+"/"+d, nil, nil)
	f.call("POST", base+"/"+d+"/cancel", "", nil)
	f.call("POST", base+"/"+d+"/remove", "", nil)
	f.call("DELETE", base+"/"+d, nil, nil)
	f.call("GET", base+"/"+d, nil, nil)
	f.call("DELETE", base+"/"+lonely, nil, nil)
}
