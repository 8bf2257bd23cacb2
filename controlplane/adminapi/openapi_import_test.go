package adminapi_test

import (
	"archive/tar"
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/importapi"
	"github.com/ql3/ql3/controlplane/importer"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/importstore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/openapi"
)

// importRoutes is the QingLong import's part of the route table
// (imports.go, ADR 0063): the edge's routes under a project.
func importRoutes() []openapi.Route {
	const base = "/api/v1/projects/{project}/import"
	proj := openapi.PathParam("project", "project id or name")
	return []openapi.Route{
		{Method: "POST", Path: base + "/inspect", Summary: "the import plan of a QingLong data directory on the replica (read-only): every row classified, the plan digest",
			Params: []openapi.Param{proj}, Request: importapi.ImportInspectRequest{},
			Responses: withErrors(openapi.OK("the plan", controlplane.ImportInspection{}), 404, 413, 503)},
		{Method: "POST", Path: base + "/upload", Summary: "upload a tar or tar.gz of a QingLong data directory and inspect it",
			Params: []openapi.Param{proj, openapi.Query("zone", "string", "the IANA zone QingLong ran in (required)"),
				openapi.Query("format", "string", "tar | tar.gz")},
			RequestContentType: "application/octet-stream",
			Responses:          withErrors(openapi.OK("the plan", controlplane.ImportInspection{}), 404, 413, 503)},
		{Method: "POST", Path: base + "/apply", Summary: "apply the plan with that digest in one transaction; refused (409) if the source changed; a replay answers existing (200)",
			Params: []openapi.Param{proj}, Request: importapi.ImportApplyRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "applied", Body: controlplane.ImportResult{}},
				200: {Description: "already applied: nothing written", Body: controlplane.ImportResult{}}}, 404, 409, 413, 503)},
	}
}

// importService is the import over the test's database.
func importService(t *testing.T, admin *pgxpool.Pool, pub *publication.Publisher, envs *envstore.Store) *importer.Service {
	return &importer.Service{Importer: &importer.Importer{Store: importstore.New(admin, pub, envs)}, UploadDir: t.TempDir()}
}

// importExamples: inspect the committed QingLong fixture (read-only),
// apply its plan, replay it; an upload of a tar without a database; a
// digest that is not the source's.
func importExamples(t *testing.T, f fixture, send func(method, path, body string, hdr ...string)) {
	t.Helper()
	from, err := filepath.Abs("../../scripts/qlfixture/testdata/qinglong-2.21.0")
	if err != nil {
		t.Fatal(err)
	}
	if code := f.call("POST", "/api/v1/projects", `{"name":"ql"}`, nil); code != 201 {
		t.Fatalf("project: %d", code)
	}
	base := "/api/v1/projects/ql/import"
	var insp controlplane.ImportInspection
	if code := f.call("POST", base+"/inspect", importapi.ImportInspectRequest{From: from, Zone: "Asia/Shanghai"}, &insp); code != 200 {
		t.Fatalf("inspect: %d", code)
	}
	f.call("POST", base+"/inspect", `{"from":"relative","zone":"Asia/Shanghai"}`, nil)
	f.call("POST", base+"/apply", importapi.ImportApplyRequest{Plan: "sha256:" + strings.Repeat("0", 64), From: from, Zone: "Asia/Shanghai"}, nil)
	var res any
	if code := f.call("POST", base+"/apply", importapi.ImportApplyRequest{Plan: insp.Digest}, &res); code != 201 {
		t.Fatalf("apply: %d %v", code, res)
	}
	if code := f.call("POST", base+"/apply", importapi.ImportApplyRequest{Plan: insp.Digest}, nil); code != 200 {
		t.Fatalf("replay: %d", code)
	}
	var empty bytes.Buffer
	tw := tar.NewWriter(&empty)
	_ = tw.Close()
	send("POST", base+"/upload?zone=Asia/Shanghai&format=tar", empty.String(), "Content-Type", "application/octet-stream", "Authorization", "Bearer "+f.token)
}
