package httpapi

import (
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/edge/importer"
)

// importRoutesDoc is the QingLong import's part of the route table
// (import.go).
func importRoutesDoc() []openapi.Route {
	return []openapi.Route{
		{Method: "POST", Path: "/api/v1/import/inspect", Summary: "the import plan of a QingLong data directory on the server (read-only; every row classified; values never shown, bound by the digest)",
			Request: ImportInspectRequest{}, Responses: withErrors(openapi.OK("the plan", importer.Inspection{}), 409, 413, 503)},
		{Method: "POST", Path: "/api/v1/import/upload", Summary: "unpack an uploaded tar or tar.gz of a QingLong data directory and return its plan (from = upload:ID)",
			Params: []openapi.Param{openapi.Query("zone", "string", "the IANA zone QingLong ran in (required)"),
				openapi.Query("format", "string", "tar (default) | tar.gz")},
			RequestContentType: scriptContentType,
			Responses:          withErrors(openapi.OK("the plan", importer.Inspection{}), 409, 413, 503)},
		{Method: "POST", Path: "/api/v1/import/apply", Summary: "apply a plan by its digest: refused if the source changed; one transaction; a replay answers existing",
			Request: ImportApplyRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "applied", Body: importer.Result{}},
				200: {Description: "this plan was applied before (existing): nothing written", Body: importer.Result{}}}, 409, 413, 503)},
	}
}
