package httpapi

import (
	"net/http"

	"github.com/ql3/ql3/core/openapi"
)

// findRoutes is the findable part of the route table (find.go, ADR 0050).
func findRoutesDoc() []openapi.Route {
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/overview", Summary: "runs by status (active, finished in 24 h), the failures of 24 h with task names, the next fires",
			Responses: withErrors(openapi.OK("the overview", Overview{}))},
		{Method: "GET", Path: "/api/v1/views", Summary: "saved task filters, by name", Responses: withErrors(openapi.OK("views", List[View]{}))},
		{Method: "POST", Path: "/api/v1/views", Summary: "save a task filter", Request: ViewRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: View{}}}, 409, 413)},
		{Method: "DELETE", Path: "/api/v1/views/{view}", Summary: "delete a view", Params: []openapi.Param{openapi.PathParam("view", "view id")},
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404)},
	}
}

// findExamples drives the findable routes for TestOpenAPIExamples.
func (f *fixture) findExamples() {
	f.call("GET", "/api/v1/tasks?q=HELLO&label=daily&enabled=true&limit=5", "")
	f.call("GET", "/api/v1/tasks?q=%01", "")
	f.call("PATCH", "/api/v1/tasks/hello", `{"labels":["daily","京东"]}`)
	f.call("PATCH", "/api/v1/tasks/hello", `{"labels":["a,b"]}`)
	f.call("GET", "/api/v1/overview", "")
	var v View
	f.decode("POST", "/api/v1/views", `{"name":"daily ones","filter":{"label":"daily"}}`, http.StatusCreated, &v)
	f.call("POST", "/api/v1/views", `{"name":"daily ones","filter":{}}`)
	f.call("GET", "/api/v1/views", "")
	f.call("DELETE", "/api/v1/views/"+v.ID, "")
	f.call("DELETE", "/api/v1/views/"+v.ID, "")
}
