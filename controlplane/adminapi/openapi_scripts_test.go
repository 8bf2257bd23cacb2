package adminapi_test

import (
	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/openapi"
)

// scriptRoutes is the scripts folders' part of the route table
// (scripts.go): the edge's routes under a project.
func scriptRoutes() []openapi.Route {
	const base = "/api/v1/projects/{project}/scripts"
	proj := openapi.PathParam("project", "project id or name")
	path := func(desc string) []openapi.Param { return []openapi.Param{proj, openapi.Query("path", "string", desc)} }
	const raw = "application/octet-stream"
	return []openapi.Route{
		{Method: "GET", Path: base, Summary: "one level of the project's scripts folder (folders first)", Params: path("folder, relative; empty for the top"),
			Responses: withErrors(openapi.OK("entries", adminapi.ScriptList{}), 404, 503)},
		{Method: "GET", Path: base + "/tree", Summary: "every file under a folder with the tree digest a script task there pins (also the ETag)", Params: path("folder, relative; empty for the top"),
			Responses: withErrors(openapi.OK("the tree", adminapi.ScriptTreeView{}), 404, 503)},
		{Method: "GET", Path: base + "/content", Summary: "a script's bytes; ETag is the hex SHA-256", Params: path("file, relative"),
			Responses: withErrors(map[int]openapi.Response{200: {Description: "the content", ContentType: raw}}, 404, 503)},
		{Method: "PUT", Path: base + "/content", Summary: "create (If-None-Match: *) or replace (If-Match: ETag) a script; a stale ETag is 412; script tasks whose tree changed get a new revision",
			Params: append(path("file, relative"),
				openapi.Param{Name: "If-None-Match", In: "header", Type: "string", Description: "* to create a new file"},
				openapi.Param{Name: "If-Match", In: "header", Type: "string", Description: "the ETag read (or * for any existing file) to replace"}),
			RequestContentType: raw,
			Responses: withErrors(map[int]openapi.Response{200: {Description: "replaced", Body: adminapi.ScriptWritten{}}, 201: {Description: "created", Body: adminapi.ScriptWritten{}},
				412: errResp("precondition failed: the file changed since it was read, or exists already")}, 404, 409, 413, 503)},
		{Method: "POST", Path: base + "/folder", Summary: "create a folder (and missing parents)", Params: []openapi.Param{proj}, Request: adminapi.ScriptFolderRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: adminapi.ScriptFolderRequest{}}}, 404, 409, 413, 503)},
		{Method: "POST", Path: base + "/move", Summary: "rename a file or folder (never over an existing path, never away from a task that runs it)", Params: []openapi.Param{proj}, Request: adminapi.ScriptMoveRequest{},
			Responses: withErrors(openapi.OK("moved", adminapi.ScriptMoveRequest{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: base, Summary: "delete a file, or a folder (recursive=true when not empty); never a script a task runs",
			Params:    append(path("file or folder, relative"), openapi.Query("recursive", "boolean", "delete a folder with its content")),
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 409, 503)},
		{Method: "POST", Path: base + "/upload", Summary: "unpack a tar, tar.gz or zip archive into a folder; checked whole before anything is written",
			Params: append(path("target folder, relative; empty for the top"), openapi.Query("format", "string", "tar | tar.gz | zip"),
				openapi.Query("overwrite", "boolean", "replace existing files")),
			RequestContentType: raw,
			Responses:          withErrors(map[int]openapi.Response{201: {Description: "unpacked", Body: controlplane.ScriptUploadResult{}}}, 404, 409, 413, 503)},
		{Method: "POST", Path: base + "/run", Summary: "run a script now: a normal Run of the project's task \"script: PATH\" (created disabled on first use)",
			Params:  []openapi.Param{proj, {Name: "Idempotency-Key", In: "header", Type: "string", Description: "retry-safe key (printable ASCII; required here or in the body)"}},
			Request: adminapi.ScriptRunRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: adminapi.RunView{}}, 200: {Description: "the Run this key already made", Body: adminapi.RunView{}}},
				404, 409, 413, 503)},
	}
}
