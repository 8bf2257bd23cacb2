package adminapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/panel"
)

// send sends one request with exactly the given headers (name, value
// pairs) over a real connection, and returns status, headers and body.
func (f fixture) send(method, path, body string, hdr ...string) (int, http.Header, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// cookieCall sends one request without the bearer token (a JSON body
// with its Content-Type), with the given headers, and returns status,
// headers and body.
func (f fixture) cookieCall(method, path, body string, hdr ...string) (int, http.Header, string) {
	f.t.Helper()
	if body != "" {
		hdr = append([]string{"Content-Type", "application/json"}, hdr...)
	}
	return f.send(method, path, body, hdr...)
}

// TestPanelSession: sign-in with an API token gives an HttpOnly,
// SameSite=Strict cookie (a random id); the cookie authorizes reads and
// same-origin changes, never a change from another origin or without
// browser origin headers; sign-out ends it.
func TestPanelSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if code, _, body := f.cookieCall("POST", httpkit.SessionPath, `{"token":"ql3c_0000000000000000_`+strings.Repeat("0", 64)+`"}`); code != 401 || !strings.Contains(body, `"field":"token"`) {
		t.Fatalf("wrong token: %d %s", code, body)
	}
	code, hdr, body := f.cookieCall("POST", httpkit.SessionPath, `{"token":"`+f.token+`"}`)
	if code != 200 {
		t.Fatalf("sign in: %d %s", code, body)
	}
	var c *http.Cookie
	for _, k := range (&http.Response{Header: hdr}).Cookies() {
		if k.Name == httpkit.CookieName {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || strings.Contains(c.Value, f.token) {
		t.Fatalf("session cookie %+v", c)
	}
	ck := httpkit.CookieName + "=" + c.Value
	if code, _, body := f.cookieCall("GET", "/api/v1/projects", "", "Cookie", ck); code != 200 {
		t.Fatalf("read with cookie: %d %s", code, body)
	}
	if code, _, body := f.cookieCall("GET", "/api/v1/projects", ""); code != 401 {
		t.Fatalf("read without credential: %d %s", code, body)
	}
	if code, _, body := f.cookieCall("POST", "/api/v1/projects", `{"name":"p1"}`, "Cookie", ck, "Sec-Fetch-Site", "same-origin", "Origin", f.url); code != 201 {
		t.Fatalf("same-origin create with cookie: %d %s", code, body)
	}
	for name, h := range map[string][]string{
		"cross-site":        {"Cookie", ck, "Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"},
		"same-site":         {"Cookie", ck, "Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"},
		"no origin headers": {"Cookie", ck},
	} {
		if code, _, body := f.cookieCall("POST", "/api/v1/projects", `{"name":"evil"}`, h...); code != 403 {
			t.Errorf("%s create with cookie: %d %s", name, code, body)
		}
	}
	if code, _, body := f.cookieCall("GET", panel.PreviewPath+"?expression=0+3+*+*+*&timeZone=Europe/Berlin&count=2", "", "Cookie", ck); code != 200 || !strings.Contains(body, `"fires"`) {
		t.Errorf("preview: %d %s", code, body)
	}
	if code, _, _ := f.cookieCall("DELETE", httpkit.SessionPath, "", "Cookie", ck, "Sec-Fetch-Site", "same-origin"); code != 204 {
		t.Errorf("sign out: %d", code)
	}
	if code, _, _ := f.cookieCall("GET", "/api/v1/projects", "", "Cookie", ck); code != 401 {
		t.Errorf("read after sign-out: %d", code)
	}
}
