package httpapi

import (
	"github.com/ql3/ql3/panel"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAuthPolicy(t *testing.T) {
	f := newFixture(t)
	other, err := NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		hdr    []string
		status int
	}{
		{"health open", "GET", "/healthz", "", nil, 200},
		{"ready open", "GET", "/readyz", "", nil, 200},
		{"panel open", "GET", "/", "", nil, 200},
		{"loopback data read without token (ADR 0039)", "GET", "/api/v1/tasks", "", nil, 401},
		{"loopback env read without token", "GET", "/api/v1/envs", "", nil, 401},
		{"loopback OpenAPI read without token", "GET", OpenAPIPath, "", nil, 200},
		{"loopback preview read without token", "GET", "/api/v1/schedule/preview?expression=@daily", "", nil, 200},
		{"loopback read with rebinding Host", "GET", OpenAPIPath, "", []string{"Host", "evil.example:5700"}, 401},
		{"localhost Host is loopback", "GET", OpenAPIPath, "", []string{"Host", "localhost:5700"}, 200},
		{"mutation without token", "POST", "/api/v1/tasks", helloTask, nil, 401},
		{"mutation with wrong token", "POST", "/api/v1/tasks", helloTask, []string{"Authorization", "Bearer " + other}, 401},
		{"mutation with Basic auth", "POST", "/api/v1/tasks", helloTask, []string{"Authorization", "Basic Zm9vOmJhcg=="}, 401},
		{"read with wrong token", "GET", "/api/v1/tasks", "", []string{"Authorization", "Bearer " + other}, 401},
		{"read with oversized token", "GET", "/api/v1/tasks", "", []string{"Authorization", "Bearer " + strings.Repeat("a", 300)}, 401},
		{"mutation with token", "POST", "/api/v1/tasks", helloTask, []string{"Authorization", "bearer " + f.token}, 201},
		{"delete without token", "DELETE", "/api/v1/tasks/hello", "", nil, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.send(tc.method, tc.path, tc.body, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 401 {
				if e := r.errBody(t); e.Code != "unauthorized" || e.Field != "Authorization" {
					t.Errorf("error body %+v", e)
				}
				if r.header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
		})
	}
	if n := f.taskCount(); n != 1 {
		t.Errorf("%d tasks; only the authorised create may have written", n)
	}
}

// TestRemotePeerNeedsTokenForReads checks the peer-address half of the
// loopback rule, which httptest cannot exercise over a real socket.
func TestRemotePeerNeedsTokenForReads(t *testing.T) {
	f := newFixture(t)
	api := New(Config{UI: panel.UI{}, Store: f.store, Logs: f.logs, Auth: Auth{Digest: DigestToken(f.token)}})
	for _, tc := range []struct {
		remote, token string
		status        int
	}{
		{"192.0.2.7:40000", "", 401},
		{"192.0.2.7:40000", f.token, 200},
		{"[::1]:40000", "", 200},
		{"[::ffff:127.0.0.1]:40000", "", 200},
	} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:5700"+OpenAPIPath, nil)
		req.RemoteAddr = tc.remote
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("peer %s token %v: %d, want %d", tc.remote, tc.token != "", rec.Code, tc.status)
		}
	}
}

func TestAuthDisabled(t *testing.T) {
	f := newFixture(t)
	api := New(Config{UI: panel.UI{}, Store: f.store, Logs: f.logs, Auth: Auth{Disabled: true}})
	req := httptest.NewRequest("POST", "http://127.0.0.1:5700/api/v1/tasks", strings.NewReader(helloTask))
	req.RemoteAddr = "127.0.0.1:1"
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for in, want := range map[string]bool{
		"127.0.0.1:5700": true, "127.1.2.3:1": true, "[::1]:5700": true, "localhost:5700": true, "LOCALHOST": true,
		"0.0.0.0:5700": false, ":5700": false, "[::]:5700": false, "192.168.1.1:5700": false, "example.com:80": false, "": false,
	} {
		if got := IsLoopbackHost(in); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestTokenSyntax(t *testing.T) {
	tok, err := NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	if !ValidTokenSyntax(tok) || len(tok) > maxTokenLength {
		t.Fatalf("fresh token %q rejected", tok)
	}
	for _, bad := range []string{"", "ql3c_", "ql3w_" + tok[5:], tok + "0", strings.ToUpper(tok), tok[:len(tok)-1] + "g", strings.Replace(tok, "_", "-", 2)} {
		if ValidTokenSyntax(bad) {
			t.Errorf("ValidTokenSyntax(%q) = true", bad)
		}
	}
}

func FuzzValidTokenSyntax(f *testing.F) {
	f.Add("ql3c_0123456789abcdef_" + strings.Repeat("0", 64))
	f.Add("ql3c__")
	f.Add("ql3c_x_y")
	f.Fuzz(func(t *testing.T, s string) {
		if ValidTokenSyntax(s) && (len(s) != len("ql3c_")+16+1+64 || !strings.HasPrefix(s, "ql3c_")) {
			t.Fatalf("accepted malformed token %q", s)
		}
	})
}
