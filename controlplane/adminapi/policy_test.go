package adminapi_test

import (
	"encoding/json"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
)

// rawCall sends one request with exactly the given headers besides the
// token, over a real connection, and returns the status and error body.
func (f fixture) rawCall(method, path, body string, hdr ...string) (int, adminapi.ErrorBody) {
	f.t.Helper()
	code, _, data := f.send(method, path, body, append([]string{"Authorization", "Bearer " + f.token}, hdr...)...)
	var eb adminapi.ErrorBody
	_ = json.Unmarshal([]byte(data), &eb)
	return code, eb
}

// TestCrossOriginAndContentType: a mutation from a foreign Origin is 403
// even with a valid token, and a JSON body needs Content-Type:
// application/json (a cross-site "simple" POST carries none).
func TestCrossOriginAndContentType(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const ct = "Content-Type"
	for _, h := range [][]string{
		{"Origin", "https://evil.example.com", ct, "application/json"},
		{"Origin", "null", ct, "application/json"},
		{"Sec-Fetch-Site", "cross-site", ct, "application/json"},
	} {
		if code, eb := f.rawCall("POST", "/api/v1/projects", `{"name":"x"}`, h...); code != 403 || eb.Field != "Origin" {
			t.Errorf("cross-origin %v: %d %+v", h[:2], code, eb)
		}
	}
	if code, eb := f.rawCall("POST", "/api/v1/projects", `{"name":"y"}`); code != 400 || eb.Field != "Content-Type" {
		t.Errorf("no Content-Type: %d %+v", code, eb)
	}
	var page adminapi.List[controlplane.Project]
	mustStatus(t, "list", f.call("GET", "/api/v1/projects", nil, &page), 200)
	if len(page.Items) != 0 {
		t.Fatalf("%d projects written by refused requests", len(page.Items))
	}
	if code, eb := f.rawCall("POST", "/api/v1/projects", `{"name":"z"}`, ct, "application/json; charset=utf-8", "Origin", f.url); code != 201 {
		t.Errorf("same-origin create: %d %+v", code, eb)
	}
	if code, _ := f.rawCall("GET", "/api/v1/projects", "", "Origin", "https://evil.example.com"); code != 200 {
		t.Errorf("cross-origin read: %d", code)
	}
}
