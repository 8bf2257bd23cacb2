package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/panel"
)

// TestPanelSessionCookie: sign-in turns the admin token into an HttpOnly,
// SameSite=Strict cookie holding a random id (never the token); the cookie
// authorizes same-origin reads and changes, never a change from another
// site or one without browser origin headers; sign-out ends it.
func TestPanelSessionCookie(t *testing.T) {
	f := newFixture(t)
	other, err := NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	if r := f.send("POST", httpkit.SessionPath, `{"token":"`+other+`"}`); r.status != 401 || r.errBody(t).Field != "token" {
		t.Fatalf("wrong token: %d %s", r.status, r.body)
	}
	if r := f.send("POST", httpkit.SessionPath, `{"token":"x","extra":1}`); r.status != 400 {
		t.Fatalf("unknown field: %d %s", r.status, r.body)
	}
	r := f.send("POST", httpkit.SessionPath, `{"token":"`+f.token+`"}`)
	if r.status != 200 {
		t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == httpkit.CookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("session cookie %+v", cookie)
	}
	if strings.Contains(cookie.Value, f.token) || len(cookie.Value) != 64 {
		t.Fatalf("cookie value is not a random id")
	}
	ck := httpkit.CookieName + "=" + cookie.Value
	// Off loopback (rebinding Host) a read needs a credential: the cookie is one.
	if r := f.send("GET", "/api/v1/tasks", "", "Cookie", ck, "Host", "edge.example:5700"); r.status != 200 {
		t.Fatalf("read with cookie: %d %s", r.status, r.body)
	}
	if r := f.send("GET", httpkit.SessionPath, "", "Cookie", ck); r.status != 200 || !strings.Contains(string(r.body), `"signedIn":true`) {
		t.Fatalf("session status: %d %s", r.status, r.body)
	}
	same := []string{"Cookie", ck, "Sec-Fetch-Site", "same-origin", "Origin", f.srv.URL}
	if r := f.send("POST", "/api/v1/tasks", helloTask, same...); r.status != 201 {
		t.Fatalf("same-origin create with cookie: %d %s", r.status, r.body)
	}
	for name, hdr := range map[string][]string{
		"cross-site":        {"Cookie", ck, "Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"},
		"foreign Origin":    {"Cookie", ck, "Origin", "http://evil.example"},
		"no origin headers": {"Cookie", ck},
	} {
		r := f.send("POST", "/api/v1/tasks/hello/disable", "", hdr...)
		if r.status != 403 && r.status != 401 {
			t.Errorf("%s change with cookie: %d %s", name, r.status, r.body)
		}
	}
	if r := f.call("GET", "/api/v1/tasks/hello", ""); !strings.Contains(string(r.body), `"enabled":true`) {
		t.Errorf("a refused change took effect: %s", r.body)
	}
	// A presented bearer token is always checked, even with a good cookie.
	if r := f.send("GET", "/api/v1/tasks", "", "Cookie", ck, "Authorization", "Bearer "+other); r.status != 401 {
		t.Errorf("wrong bearer with good cookie: %d", r.status)
	}
	if r := f.send("DELETE", httpkit.SessionPath, "", same...); r.status != 204 {
		t.Fatalf("sign out: %d %s", r.status, r.body)
	}
	if r := f.send("GET", "/api/v1/tasks", "", "Cookie", ck, "Host", "edge.example:5700"); r.status != 401 {
		t.Errorf("read after sign-out: %d", r.status)
	}
}

// TestPanelAssetsAndPreview: the panel's files carry the strict CSP and
// the preview endpoint answers field errors by the trigger's field names.
func TestPanelAssetsAndPreview(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/", "/panel/app.js", "/panel/app.css"} {
		r := f.send("GET", p, "", "Host", "edge.example:5700")
		if r.status != 200 || r.header.Get("Content-Security-Policy") != panel.CSP {
			t.Errorf("%s: %d csp %q", p, r.status, r.header.Get("Content-Security-Policy"))
		}
	}
	r := f.call("GET", panel.PreviewPath+"?expression=30+2+*+*+*&timeZone=America/New_York&afterMs=1772928000000&count=3", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"mark":"gap"`) {
		t.Errorf("preview across spring-forward: %d %s", r.status, r.body)
	}
	r = f.call("GET", panel.PreviewPath+"?expression=61+*+*+*+*", "")
	if r.status != 400 || r.errBody(t).Field != "expression" {
		t.Errorf("bad expression: %d %s", r.status, r.body)
	}
	r = f.call("GET", panel.PreviewPath+"?expression=*+*+*+*+*&count=500", "")
	if r.status != 400 || r.errBody(t).Field != "count" {
		t.Errorf("count over the bound: %d %s", r.status, r.body)
	}
}

// TestRunsFilterByOrigin: the runs list (the panel's filter) narrows by
// origin and names the field for an unknown one.
func TestRunsFilterByOrigin(t *testing.T) {
	f := newFixture(t)
	f.createHello()
	var rn Run
	f.decode("POST", "/api/v1/tasks/hello/runs", "", http.StatusCreated, &rn)
	var manual, scheduled List[Run]
	f.decode("GET", "/api/v1/runs?origin=manual", "", http.StatusOK, &manual)
	f.decode("GET", "/api/v1/runs?origin=schedule", "", http.StatusOK, &scheduled)
	if len(manual.Items) != 1 || manual.Items[0].ID != rn.ID || len(scheduled.Items) != 0 {
		t.Errorf("manual %d, schedule %d runs", len(manual.Items), len(scheduled.Items))
	}
	if r := f.call("GET", "/api/v1/runs?origin=cron", ""); r.status != 400 || r.errBody(t).Field != "origin" {
		t.Errorf("unknown origin: %d %s", r.status, r.body)
	}
}

// TestSchedulePreviewPathIsThePanels: the loopback read exemption names the
// panel's preview route by its own constant (the API does not import the
// panel).
func TestSchedulePreviewPathIsThePanels(t *testing.T) {
	if schedulePreviewPath != panel.PreviewPath {
		t.Fatalf("schedulePreviewPath %q != panel.PreviewPath %q", schedulePreviewPath, panel.PreviewPath)
	}
}
