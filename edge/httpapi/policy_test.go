package httpapi

import (
	"github.com/ql3/ql3/panel"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newNoAuthFixture is newFixture served with --no-auth (Auth.Disabled).
func newNoAuthFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	srv := httptest.NewServer(New(Config{UI: panel.UI{}, Store: f.store, Logs: f.logs, Clock: f.clock, Auth: Auth{Disabled: true}}))
	t.Cleanup(srv.Close)
	f.srv = srv
	return f
}

// TestNoAuthKeepsHostCheck: --no-auth trusts loopback clients, so a
// request whose Host is a foreign name (a DNS-rebinding page) is refused
// before anything runs, reads and mutations alike.
func TestNoAuthKeepsHostCheck(t *testing.T) {
	f := newNoAuthFixture(t)
	evil := []string{"Host", "evil.example.com"}
	if r := f.send("POST", "/api/v1/tasks", helloTask, evil...); r.status != http.StatusForbidden || r.errBody(t).Field != "Host" {
		t.Fatalf("create with foreign Host: %d %s", r.status, r.body)
	}
	if r := f.send("GET", "/api/v1/tasks", "", evil...); r.status != http.StatusForbidden {
		t.Fatalf("read with foreign Host: %d %s", r.status, r.body)
	}
	if r := f.send("POST", "/api/v1/tasks", helloTask); r.status != http.StatusCreated {
		t.Fatalf("loopback create: %d %s", r.status, r.body)
	}
	if r := f.send("POST", "/api/v1/tasks/hello/runs", "", evil...); r.status != http.StatusForbidden {
		t.Fatalf("run now with foreign Host: %d %s", r.status, r.body)
	}
	if r := f.send("GET", "/healthz", "", evil...); r.status != http.StatusOK {
		t.Fatalf("health probe: %d", r.status)
	}
}

// TestCrossOriginMutationsRefused: a mutating request from a foreign Origin
// (what a web page the user visits would send) is 403 with or without the
// token and with or without auth; same-origin and Origin-less (CLI) pass.
func TestCrossOriginMutationsRefused(t *testing.T) {
	for _, noAuth := range []bool{false, true} {
		f := newFixture(t)
		if noAuth {
			f = newNoAuthFixture(t)
		}
		foreign := [][]string{
			{"Origin", "https://evil.example.com"},
			{"Origin", "null"},
			{"Origin", "http://127.0.0.1:1"}, // another port is another origin
			{"Sec-Fetch-Site", "cross-site"},
		}
		for _, h := range foreign {
			for _, req := range []struct{ method, path, body string }{
				{"POST", "/api/v1/tasks", helloTask},
				{"DELETE", "/api/v1/tasks/hello", ""},
				{"POST", "/api/v1/tasks/hello/runs", ""},
			} {
				r := f.call(req.method, req.path, req.body, h...)
				if r.status != http.StatusForbidden || r.errBody(t).Field != "Origin" {
					t.Errorf("noAuth=%v %s %s with %s: %d %s", noAuth, req.method, req.path, h, r.status, r.body)
				}
			}
		}
		if n := f.taskCount(); n != 0 {
			t.Fatalf("noAuth=%v: %d tasks written by cross-origin requests", noAuth, n)
		}
		if r := f.call("POST", "/api/v1/tasks", helloTask, "Origin", f.srv.URL); r.status != http.StatusCreated {
			t.Errorf("noAuth=%v same-origin create: %d %s", noAuth, r.status, r.body)
		}
		if r := f.call("GET", "/api/v1/tasks", "", "Origin", "https://evil.example.com"); r.status != http.StatusOK {
			t.Errorf("noAuth=%v cross-origin read (no side effect): %d", noAuth, r.status)
		}
	}
}

// TestJSONBodiesNeedContentType: a body without Content-Type (a "simple"
// cross-site request needs no preflight) or with another type is refused,
// naming the header; bodiless mutations need none.
func TestJSONBodiesNeedContentType(t *testing.T) {
	f := newFixture(t)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		req, err := http.NewRequest("POST", f.srv.URL+"/api/v1/tasks", stringsReader(helloTask))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+f.token)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: %d", ct, resp.StatusCode)
		}
	}
	if n := f.taskCount(); n != 0 {
		t.Fatalf("%d tasks created without a JSON Content-Type", n)
	}
	f.createHello()
	if r := f.call("POST", "/api/v1/tasks/hello/disable", ""); r.status != http.StatusOK {
		t.Fatalf("bodiless disable: %d %s", r.status, r.body)
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
