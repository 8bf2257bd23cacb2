package adminapi_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/controlplane/subapi"
	"github.com/ql3/ql3/controlplane/subrun"
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/subfetch/gittest"
)

// subsService is the subscriptions' port over the test database.
func subsService(t *testing.T, db *pgtest.DB) controlplane.Subscriptions {
	admin := db.Pool(t, postgres.RoleAdmin)
	pub := publication.NewPublisher(admin, publication.PublisherOptions{})
	subs := substore.New(admin)
	puller := &subrun.Puller{Subs: subs, Trees: scriptstore.New(admin), Tasks: pub, WorkDir: t.TempDir()}
	return &subrun.Service{Subs: subs, Tasks: pub, Runs: runops.NewRunOps(db.Pool(t, postgres.RoleRuntime)), Puller: puller}
}

// exerciseSubs drives every subscription route against a local repository.
func exerciseSubs(t *testing.T, f fixture, send func(method, path, body string, hdr ...string), token string,
	id func(method, path, body string) string) {
	r := gittest.New(t)
	r.Write(map[string]string{"jd_bean.js": "// cron: 0 1 * * *\nconst $ = new Env('京豆');\n"})
	r.Commit("first")
	const base = "/api/v1/projects/ops/subscriptions"
	body := `{"name":"repo","kind":"git","url":"` + r.URL() + `","branch":"main","extensions":[".js"],"schedule":"0 4 * * *"}`
	sub := id("POST", base, body)
	f.call("POST", base, body, nil)
	f.call("POST", base, `{"name":"bad","kind":"git","url":"https://u:p@example.org/x.git"}`, nil)
	f.call("GET", base, nil, nil)
	f.call("GET", base+"/"+sub, nil, nil)
	f.call("PUT", base+"/"+sub+"?expectedVersion=1", `{"name":"repo","kind":"git","url":"`+r.URL()+`","branch":"main","extensions":[".js"],"schedule":"0 5 * * *"}`, nil)
	f.call("PUT", base+"/"+sub+"?expectedVersion=1", body, nil)
	f.call("POST", base+"/"+sub+"/preview", "", nil)
	send("POST", base+"/"+sub+"/pull", "", "Authorization", "Bearer "+token, "Idempotency-Key", "pull-1")
	f.call("POST", base+"/"+sub+"/pull", `{"idempotencyKey":"pull-1"}`, nil)
	f.call("POST", base+"/"+sub+"/pull", `{}`, nil)
	f.call("DELETE", base+"/"+sub, nil, nil)
	f.call("GET", base+"/"+sub, nil, nil)
}

// subscriptionRoutes is the subscriptions' part of the route table
// (subscriptions.go): the edge's routes under a project.
func subscriptionRoutes() []openapi.Route {
	const base = "/api/v1/projects/{project}/subscriptions"
	proj := openapi.PathParam("project", "project id or name")
	one := []openapi.Param{proj, openapi.PathParam("id", "subscription id")}
	return []openapi.Route{
		{Method: "GET", Path: base, Summary: "the project's subscriptions", Params: []openapi.Param{proj},
			Responses: withErrors(openapi.OK("subscriptions", subapi.SubscriptionList{}), 404, 503)},
		{Method: "POST", Path: base, Summary: "subscribe to a git repository or a raw file (publishes its system task; credential names an env store entry)",
			Params: []openapi.Param{proj}, Request: subapi.SubscriptionRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: subapi.SubscriptionView{}}}, 404, 409, 413, 503)},
		{Method: "GET", Path: base + "/{id}", Summary: "one subscription", Params: one,
			Responses: withErrors(openapi.OK("the subscription", subapi.SubscriptionView{}), 404, 503)},
		{Method: "PUT", Path: base + "/{id}", Summary: "replace a subscription (its system task follows)",
			Params: append(one, openapi.Query("expectedVersion", "integer", "the version this replaces (optional)")), Request: subapi.SubscriptionRequest{},
			Responses: withErrors(openapi.OK("replaced", subapi.SubscriptionView{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: base + "/{id}", Summary: "delete a subscription and its system task; the tasks it made and its folder stay", Params: one,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 503)},
		{Method: "POST", Path: base + "/{id}/pull", Summary: "pull now: a Run of the subscription's system task, run by the control plane",
			Params:  append(one, openapi.Param{Name: "Idempotency-Key", In: "header", Type: "string", Description: "retry-safe key (printable ASCII; here or in the body)"}),
			Request: subapi.PullRequest{}, RequestOptional: true,
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: adminapi.RunView{}}, 200: {Description: "the Run this key already made", Body: adminapi.RunView{}}},
				404, 409, 503)},
		{Method: "POST", Path: base + "/{id}/preview", Summary: "what a pull would do now: the plan over a freshly fetched tree (nothing written)", Params: one,
			Responses: withErrors(openapi.OK("the plan", controlplane.SubscriptionPreview{}), 404, 503)},
	}
}
