package adminapi_test

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/postgres/publication"
)

// TestAuditListedThroughAPI: a mutation over the API is audited as the
// calling token (its id, never its text) from the peer's address, and
// GET /api/v1/audit pages through the lines with a bounded limit.
func TestAuditListedThroughAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tokenID := strings.Split(f.token, "_")[1]
	var proj controlplane.Project
	mustStatus(t, "create", f.call("POST", "/api/v1/projects", `{"name":"audited"}`, &proj), 201)
	var w controlplane.Worker
	mustStatus(t, "register", f.call("POST", "/api/v1/workers", `{"name":"w1"}`, &w), 201)

	var page adminapi.List[controlplane.AuditRecord]
	mustStatus(t, "audit", f.call("GET", "/api/v1/audit?limit=1", nil, &page), 200)
	if len(page.Items) != 1 || page.NextCursor == "" {
		t.Fatalf("first page: %+v", page)
	}
	newest := page.Items[0]
	if newest.Action != publication.AuditWorkerRegister || newest.SubjectID != w.ID || newest.ActorID != tokenID ||
		newest.ActorKind != "admin" || newest.RemoteAddr != "127.0.0.1" {
		t.Errorf("newest line %+v", newest)
	}
	mustStatus(t, "audit page 2", f.call("GET", "/api/v1/audit?limit=1&cursor="+page.NextCursor, nil, &page), 200)
	// The fixture's own token was created without an actor (system) before.
	if len(page.Items) != 1 || page.Items[0].Action != "project.create" || page.Items[0].SubjectID != proj.ID {
		t.Errorf("second page %+v", page)
	}
	mustStatus(t, "audit filtered", f.call("GET", "/api/v1/audit?action=project.create", nil, &page), 200)
	if len(page.Items) != 1 {
		t.Errorf("filtered: %+v", page)
	}
	var eb adminapi.ErrorBody
	if code := f.call("GET", "/api/v1/audit?limit=100000", nil, &eb); code != 400 || eb.Field != "limit" {
		t.Errorf("unbounded limit: %d %+v", code, eb)
	}
	if strings.Contains(f.logs.String(), f.token) {
		t.Error("the token reached the log")
	}
}
