package httpapi

import (
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/edge/notify"
)

// notifyRoutes is the notifications' part of the route table (notify.go).
func notifyRoutes() []openapi.Route {
	id := []openapi.Param{openapi.PathParam("id", "channel, rule or delivery id")}
	del := withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409, 503)
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/notify/channels", Summary: "notification channels, without credentials",
			Responses: withErrors(openapi.OK("channels", List[NotifyChannel]{}), 503)},
		{Method: "POST", Path: "/api/v1/notify/channels", Summary: "create a channel (credentials are write-only; audited)", Request: CreateChannelRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: NotifyChannel{}}}, 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/notify/channels/{id}", Summary: "one channel, without credentials", Params: id,
			Responses: withErrors(openapi.OK("channel", NotifyChannel{}), 404, 503)},
		{Method: "PATCH", Path: "/api/v1/notify/channels/{id}", Summary: "change a channel (empty credentials keep the stored ones; audited)",
			Params: id, Request: PatchChannelRequest{}, Responses: withErrors(openapi.OK("updated", NotifyChannel{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/notify/channels/{id}", Summary: "delete a channel no rule names (audited)", Params: id, Responses: del},
		{Method: "POST", Path: "/api/v1/notify/channels/{id}/test", Summary: "send a test message now; the recorded delivery (audited)", Params: id,
			Request: struct{}{}, RequestOptional: true, Responses: withErrors(openapi.OK("the test delivery", NotifyDelivery{}), 404, 503)},
		{Method: "GET", Path: "/api/v1/notify/rules", Summary: "notification rules", Responses: withErrors(openapi.OK("rules", List[NotifyRule]{}), 503)},
		{Method: "POST", Path: "/api/v1/notify/rules", Summary: "create a rule (audited)", Request: RuleRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: NotifyRule{}}}, 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/notify/rules/{id}", Summary: "one rule", Params: id, Responses: withErrors(openapi.OK("rule", NotifyRule{}), 404, 503)},
		{Method: "PUT", Path: "/api/v1/notify/rules/{id}", Summary: "replace a rule (audited)", Params: id, Request: RuleRequest{},
			Responses: withErrors(openapi.OK("replaced", NotifyRule{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/notify/rules/{id}", Summary: "delete a rule (audited)", Params: id, Responses: del},
		{Method: "GET", Path: "/api/v1/notify/deliveries", Summary: "the delivery log, newest first, with each delivery's attempts",
			Params: []openapi.Param{openapi.Query("status", "string", "pending, held, delivered, failed, dropped or digested"),
				openapi.Query("channel", "string", "channel id"), openapi.Query("run", "string", "run id"),
				openapi.Query("before", "integer", "nextBefore of the previous page"), openapi.Query("limit", "integer", "1..200 (default 50)")},
			Responses: withErrors(openapi.OK("deliveries", DeliveryList{}), 503)},
		{Method: "GET", Path: "/api/v1/notify/deliveries/{id}", Summary: "one delivery with its attempts", Params: id,
			Responses: withErrors(openapi.OK("delivery", NotifyDelivery{}), 404, 503)},
		{Method: "POST", Path: notify.SendPath, Summary: "a script's sendNotify(title, content): Authorization: Bearer $QL3_NOTIFY_TOKEN (the Run's token, valid while it is active)",
			Request: SendNotifyRequest{}, Responses: withErrors(map[int]openapi.Response{202: {Description: "queued", Body: SendNotifyResponse{}}}, 413, 503)},
	}
}
