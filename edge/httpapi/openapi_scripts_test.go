package httpapi

import "github.com/ql3/ql3/core/openapi"

// scriptRoutes is the scripts folder's part of the route table (scripts.go).
func scriptRoutes() []openapi.Route {
	path := func(desc string) openapi.Param { return openapi.Query("path", "string", desc) }
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/scripts", Summary: "one level of the scripts folder (folders first)", Params: []openapi.Param{path("folder, relative; empty for the top")},
			Responses: withErrors(openapi.OK("entries", ScriptList{}), 404, 503)},
		{Method: "GET", Path: "/api/v1/scripts/tree", Summary: "every file under a folder with the tree digest (also the ETag)", Params: []openapi.Param{path("folder, relative; empty for the top")},
			Responses: withErrors(openapi.OK("the tree", ScriptTree{}), 404, 503)},
		{Method: "GET", Path: "/api/v1/scripts/content", Summary: "a script's bytes; ETag is the hex SHA-256", Params: []openapi.Param{path("file, relative")},
			Responses: withErrors(map[int]openapi.Response{200: {Description: "the content", ContentType: scriptContentType}}, 404, 413, 503)},
		{Method: "PUT", Path: "/api/v1/scripts/content", Summary: "create (If-None-Match: *) or replace (If-Match: ETag) a script atomically; a stale ETag is 412",
			Params: []openapi.Param{path("file, relative"),
				{Name: "If-None-Match", In: "header", Type: "string", Description: "* to create a new file"},
				{Name: "If-Match", In: "header", Type: "string", Description: "the ETag read (or * for any existing file) to replace"}},
			RequestContentType: scriptContentType,
			Responses: withErrors(map[int]openapi.Response{200: {Description: "replaced", Body: ScriptWritten{}}, 201: {Description: "created", Body: ScriptWritten{}},
				412: errResp("precondition failed: the file changed since it was read, or exists already")}, 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/scripts/folder", Summary: "create a folder (and missing parents)", Request: ScriptFolderRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: ScriptFolderRequest{}}}, 409, 413, 503)},
		{Method: "POST", Path: "/api/v1/scripts/move", Summary: "rename a file or folder (never over an existing path)", Request: ScriptMoveRequest{},
			Responses: withErrors(openapi.OK("moved", ScriptMoveRequest{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/scripts", Summary: "delete a file, or a folder (recursive=true when not empty)",
			Params:    []openapi.Param{path("file or folder, relative"), openapi.Query("recursive", "boolean", "delete a folder with its content")},
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409, 503)},
		{Method: "POST", Path: "/api/v1/scripts/upload", Summary: "unpack a tar, tar.gz or zip archive into a folder; checked whole before anything is written",
			Params: []openapi.Param{path("target folder, relative; empty for the top"), openapi.Query("format", "string", "tar | tar.gz | zip"),
				openapi.Query("overwrite", "boolean", "replace existing files")},
			RequestContentType: scriptContentType,
			Responses:          withErrors(map[int]openapi.Response{201: {Description: "unpacked", Body: ScriptUploadResult{}}}, 409, 413, 503)},
		{Method: "POST", Path: "/api/v1/scripts/run", Summary: "run a script now: a normal Run of the script's own task (\"script: PATH\")",
			Params:  []openapi.Param{{Name: "Idempotency-Key", In: "header", Type: "string", Description: "retry-safe key (printable ASCII)"}},
			Request: ScriptRunRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: Run{}}, 200: {Description: "the Run this key already made", Body: Run{}}},
				404, 409, 413, 503)},
	}
}
