package httpapi

import "github.com/ql3/ql3/core/openapi"

// envRoutes is the env store's part of the route table (envs.go).
func envRoutes() []openapi.Route {
	id := []openapi.Param{openapi.PathParam("id", "env entry id")}
	one := func(desc string) map[int]openapi.Response {
		return withErrors(openapi.OK(desc, EnvEntry{}), 404, 413, 503)
	}
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/envs", Summary: "list env entries in QingLong order, without values",
			Params:    append(pageParams, openapi.Query("q", "string", "substring of the name or the remarks")),
			Responses: withErrors(openapi.OK("a page of entries", EnvList{}), 503)},
		{Method: "POST", Path: "/api/v1/envs", Summary: "create an entry (the value is write-only)", Request: CreateEnvRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: EnvEntry{}}}, 413, 503)},
		{Method: "GET", Path: "/api/v1/envs/{id}", Summary: "one entry, without its value", Params: id, Responses: withErrors(openapi.OK("entry", EnvEntry{}), 404, 503)},
		{Method: "PATCH", Path: "/api/v1/envs/{id}", Summary: "change fields of an entry", Params: id, Request: PatchEnvRequest{}, Responses: one("updated")},
		{Method: "DELETE", Path: "/api/v1/envs/{id}", Summary: "delete an entry", Params: id,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 503)},
		{Method: "POST", Path: "/api/v1/envs/{id}/enable", Summary: "enable", Params: id, Responses: one("enabled")},
		{Method: "POST", Path: "/api/v1/envs/{id}/disable", Summary: "disable", Params: id, Responses: one("disabled")},
		{Method: "POST", Path: "/api/v1/envs/{id}/move", Summary: "place before another entry (before: \"\" → last)", Params: id,
			Request: MoveEnvRequest{}, Responses: one("moved")},
		{Method: "POST", Path: "/api/v1/envs/{id}/reveal", Summary: "the value of one entry (a credential, never the loopback exemption; audited)",
			Params: id, Request: struct{}{}, RequestOptional: true, Responses: withErrors(openapi.OK("the entry with its value", EnvValue{}), 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/envs/import", Summary: "create entries from NAME=value lines or JSON, all or none", Request: ImportEnvRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: ImportEnvResponse{}}}, 413, 503)},
		{Method: "POST", Path: "/api/v1/envs/export", Summary: "every entry as JSON or NAME=value lines; values audited", Request: ExportEnvRequest{},
			Responses: withErrors(openapi.OK("the export", EnvExport{}), 413, 503)},
		{Method: "POST", Path: "/api/v1/envs/rotate-key", Summary: "re-wrap the data key under a new key file (no downtime)",
			Request: struct{}{}, RequestOptional: true, Responses: withErrors(openapi.OK("rotated", RotateKeyResponse{}), 413, 503)},
		{Method: "GET", Path: "/api/v1/audit", Summary: "audit lines of the env store, oldest first",
			Params:    []openapi.Param{openapi.Query("after", "integer", "lines after this seq"), openapi.Query("limit", "integer", "lines (1..200)")},
			Responses: withErrors(openapi.OK("audit lines; next is the ?after= of the next page", AuditList{}), 503)},
	}
}
