package adminapi_test

import (
	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/openapi"
)

// viewRoutes is the saved views' part of the route table (taskfind.go).
func viewRoutes() []openapi.Route {
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/views", Summary: "a project's saved task filters, by name",
			Params:    []openapi.Param{openapi.Query("project", "string", "project id or name")},
			Responses: withErrors(openapi.OK("every view", adminapi.List[controlplane.TaskView]{}))},
		{Method: "POST", Path: "/api/v1/views", Summary: "save a task filter {q, label, enabled} under a name (at most 100 per project)",
			Request: adminapi.ViewRequest{}, Responses: withErrors(openapi.Created("created", controlplane.TaskView{}), 409, 413)},
		{Method: "DELETE", Path: "/api/v1/views/{view}", Summary: "delete a saved view",
			Params:    []openapi.Param{openapi.PathParam("view", "view id")},
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404)},
	}
}

// exerciseViews sends the labels' and views' requests (project "ops").
func exerciseViews(f fixture, id func(method, path, body string) string) {
	task := id("POST", "/api/v1/tasks", `{"project":"ops","name":"签到","spec":{"kind":"qinglong/command@v1","shell":{"command":"true"}},"labels":["京东","daily"]}`)
	f.call("PATCH", "/api/v1/tasks/"+task, `{"labels":["京东"]}`, nil)
	f.call("PATCH", "/api/v1/tasks/"+task, `{"labels":["a,b"]}`, nil)
	f.call("GET", "/api/v1/tasks?project=ops&label=京东&enabled=true&limit=1", nil, nil)
	f.call("GET", "/api/v1/tasks?project=ops&enabled=maybe", nil, nil)
	view := id("POST", "/api/v1/views", `{"project":"ops","name":"京东","filter":{"label":"京东","enabled":"true"}}`)
	f.call("POST", "/api/v1/views", `{"project":"ops","name":"京东","filter":{}}`, nil)
	f.call("GET", "/api/v1/views?project=ops", nil, nil)
	f.call("DELETE", "/api/v1/views/"+view, nil, nil)
	f.call("DELETE", "/api/v1/views/"+view, nil, nil)
}
