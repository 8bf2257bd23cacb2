package adminapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/panel"
)

// Every route of the admin API enforces the token's scopes as core/access
// maps them (ADR 0060): walked over the mux's own route table, so a new
// route is covered the day it is added.
func TestScopesEnforcedOnEveryRoute(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	pub := publication.NewPublisher(f.db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{})
	tokens := map[access.Scope]string{}
	for _, sc := range []access.Scope{access.ReadOnly, access.Runs, access.Envs, access.Scripts} {
		_, text, err := pub.CreateScopedAPIToken(ctx, "scope-"+string(sc), []string{string(sc)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		tokens[sc] = text
	}
	send := func(token, method, path string) int {
		t.Helper()
		var body *strings.Reader
		if method == "GET" || method == "DELETE" {
			body = strings.NewReader("")
		} else {
			body = strings.NewReader("{}")
		}
		req, err := http.NewRequest(method, f.url+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	srv := adminapi.New(adminapi.Config{UI: panel.UI{}})
	checked := 0
	for _, pattern := range adminapi.Patterns(srv) {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok || method == "HEAD" {
			continue
		}
		// Path parameters: a project named ops, everything else x.
		path = strings.ReplaceAll(path, "{project}", "ops")
		for strings.Contains(path, "{") {
			i, j := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:i] + "x" + path[j+1:]
		}
		if send("", method, path) != http.StatusUnauthorized {
			continue // an open route: no credential, no scope
		}
		for sc, tok := range tokens {
			allowed := access.Allows([]access.Scope{sc}, method, path)
			got := send(tok, method, path)
			if allowed && (got == http.StatusForbidden || got == http.StatusUnauthorized) {
				t.Errorf("%s token: %s %s answered %d, want it let through", sc, method, path, got)
			}
			if !allowed && got != http.StatusForbidden {
				t.Errorf("%s token: %s %s answered %d, want 403", sc, method, path, got)
			}
			checked++
		}
	}
	if checked < 4*40 {
		t.Fatalf("only %d route×scope checks: the route table was not walked", checked)
	}
	// The issue's own examples, written out.
	for _, c := range []struct {
		scope        access.Scope
		method, path string
		want         int
	}{
		{access.ReadOnly, "POST", "/api/v1/tasks", http.StatusForbidden},
		{access.ReadOnly, "DELETE", "/api/v1/tokens/x", http.StatusForbidden},
		{access.ReadOnly, "GET", "/api/v1/audit", http.StatusForbidden},
		{access.Envs, "GET", "/api/v1/tasks", http.StatusForbidden},
		{access.Envs, "POST", "/api/v1/tasks/x/runs", http.StatusForbidden},
		{access.Envs, "GET", "/api/v1/projects/ops/envs", http.StatusServiceUnavailable}, // let through; this fixture has no env store
		{access.ReadOnly, "GET", "/api/v1/tasks", http.StatusOK},
	} {
		if got := send(tokens[c.scope], c.method, c.path); got != c.want {
			t.Errorf("%s token: %s %s answered %d, want %d", c.scope, c.method, c.path, got, c.want)
		}
	}
	// The fixture's admin token may list tokens; a revoked scoped one is 401.
	if got := send(f.token, "GET", "/api/v1/tokens"); got != http.StatusOK {
		t.Errorf("admin token: GET /api/v1/tokens answered %d", got)
	}
	list, err := pub.ListAPITokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list {
		if tok.Name == "scope-runs" {
			if got := send(f.token, "DELETE", "/api/v1/tokens/"+tok.ID); got != http.StatusNoContent {
				t.Fatalf("revoke: %d", got)
			}
		}
	}
	if got := send(tokens[access.Runs], "GET", "/api/v1/runs"); got != http.StatusUnauthorized {
		t.Errorf("revoked runs token: %d, want 401", got)
	}
}
