package adminapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/notifyd"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/notifykit"
)

// notifyRoutes is the notifications' part of the route table (notify.go):
// the edge's shapes, scoped by ?project=.
func notifyRoutes() []openapi.Route {
	project := openapi.Query("project", "string", "project id or name (required)")
	one := []openapi.Param{project, openapi.PathParam("id", "channel, rule or delivery id")}
	all := []openapi.Param{project}
	del := withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409, 503)
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/notify/channels", Summary: "a project's notification channels, without credentials", Params: all,
			Responses: withErrors(openapi.OK("channels", adminapi.List[notifykit.NotifyChannel]{}), 503)},
		{Method: "POST", Path: "/api/v1/notify/channels", Summary: "create a channel (credentials are write-only, sealed at rest; audited)", Params: all,
			Request: notifykit.CreateChannelRequest{}, Responses: withErrors(openapi.Created("created", notifykit.NotifyChannel{}), 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/notify/channels/{id}", Summary: "one channel, without credentials", Params: one,
			Responses: withErrors(openapi.OK("channel", notifykit.NotifyChannel{}), 404, 503)},
		{Method: "PATCH", Path: "/api/v1/notify/channels/{id}", Summary: "change a channel (empty credentials keep the stored ones; audited)",
			Params: one, Request: notifykit.PatchChannelRequest{}, Responses: withErrors(openapi.OK("updated", notifykit.NotifyChannel{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/notify/channels/{id}", Summary: "delete a channel no rule names (audited)", Params: one, Responses: del},
		{Method: "POST", Path: "/api/v1/notify/channels/{id}/test", Summary: "send a test message now from this replica; the recorded delivery (audited)",
			Params: one, Responses: withErrors(openapi.OK("the test delivery", notifykit.NotifyDelivery{}), 404, 503)},
		{Method: "GET", Path: "/api/v1/notify/rules", Summary: "a project's notification rules", Params: all,
			Responses: withErrors(openapi.OK("rules", adminapi.List[notifykit.NotifyRule]{}), 503)},
		{Method: "POST", Path: "/api/v1/notify/rules", Summary: "create a rule (audited)", Params: all, Request: notifykit.RuleRequest{},
			Responses: withErrors(openapi.Created("created", notifykit.NotifyRule{}), 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/notify/rules/{id}", Summary: "one rule", Params: one, Responses: withErrors(openapi.OK("rule", notifykit.NotifyRule{}), 404, 503)},
		{Method: "PUT", Path: "/api/v1/notify/rules/{id}", Summary: "replace a rule (audited)", Params: one, Request: notifykit.RuleRequest{},
			Responses: withErrors(openapi.OK("replaced", notifykit.NotifyRule{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/notify/rules/{id}", Summary: "delete a rule (audited)", Params: one, Responses: del},
		{Method: "GET", Path: "/api/v1/notify/deliveries", Summary: "the project's delivery log, newest first, with each delivery's attempts",
			Params: []openapi.Param{project, openapi.Query("status", "string", "pending, held, delivered, failed, dropped or digested"),
				openapi.Query("channel", "string", "channel id"), openapi.Query("run", "string", "run id"),
				openapi.Query("before", "integer", "nextBefore of the previous page"), openapi.Query("limit", "integer", "1..200 (default 50)")},
			Responses: withErrors(openapi.OK("deliveries", notifykit.DeliveryList{}), 503)},
		{Method: "GET", Path: "/api/v1/notify/deliveries/{id}", Summary: "one delivery with its attempts", Params: one,
			Responses: withErrors(openapi.OK("delivery", notifykit.NotifyDelivery{}), 404, 503)},
	}
}

// notifyPorts are the notification ports on the test database: the admin
// store and one replica's deliverer (not running its loop: "send test"
// delivers at once).
func notifyPorts(t *testing.T, db *pgtest.DB) adminapi.NotifyPorts {
	t.Helper()
	kek, err := envseal.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	runtime := db.Pool(t, postgres.RoleRuntime)
	c, err := notifystore.OpenCipher(context.Background(), runtime, kek)
	if err != nil {
		t.Fatal(err)
	}
	d, err := notifyd.New(notifyd.Config{Feed: postgres.NewFeed(runtime), Consumers: postgres.NewFeed(runtime),
		Outbox: notifystore.NewOutbox(runtime, c), Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return adminapi.NotifyPorts{Config: notifystore.NewConfig(db.Pool(t, postgres.RoleAdmin), c), Tester: d}
}

// exerciseNotify drives every notification route against a local webhook.
func exerciseNotify(t *testing.T, f fixture, id func(method, path, body string) string) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(hook.Close)
	q := "?project=ops"
	ch := id("POST", "/api/v1/notify/channels"+q, `{"name":"hook","settings":{"kind":"webhook","server":"`+hook.URL+`/h?token=abcd","secret":"s3cret"}}`)
	f.call("POST", "/api/v1/notify/channels"+q, `{"name":"bad","settings":{"kind":"carrier-pigeon"}}`, nil)
	f.call("GET", "/api/v1/notify/channels"+q, nil, nil)
	f.call("GET", "/api/v1/notify/channels/"+ch+q, nil, nil)
	f.call("PATCH", "/api/v1/notify/channels/"+ch+q, `{"enabled":true}`, nil)
	var test struct{ ID int64 }
	f.call("POST", "/api/v1/notify/channels/"+ch+"/test"+q, "", &test)
	rule := id("POST", "/api/v1/notify/rules"+q, `{"name":"failures","channels":["`+ch+`"]}`)
	f.call("GET", "/api/v1/notify/rules"+q, nil, nil)
	f.call("GET", "/api/v1/notify/rules/"+rule+q, nil, nil)
	f.call("PUT", "/api/v1/notify/rules/"+rule+q, `{"name":"failures","kinds":["failed","lost"],"channels":["`+ch+`"]}`, nil)
	f.call("DELETE", "/api/v1/notify/channels/"+ch+q, nil, nil) // 409: the rule names it
	f.call("GET", "/api/v1/notify/deliveries"+q+"&limit=5", nil, nil)
	f.call("GET", "/api/v1/notify/deliveries/"+strconv.FormatInt(test.ID, 10)+q, nil, nil)
	f.call("DELETE", "/api/v1/notify/rules/"+rule+q, nil, nil)
	f.call("DELETE", "/api/v1/notify/channels/"+ch+q, nil, nil)
	f.call("GET", "/api/v1/notify/rules"+q[:1]+"project=nope", nil, nil)
}
