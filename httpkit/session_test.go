package httpkit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func issue(t *testing.T, s *Sessions, value string) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	if err := s.Issue(w, httptest.NewRequest("POST", "/api/v1/session", nil), value); err != nil {
		t.Fatal(err)
	}
	return w.Result().Cookies()[0]
}

func withCookie(c *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "/api/v1/tasks", nil)
	r.AddCookie(c)
	return r
}

func TestSessionsExpireAndStayBounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s := NewSessions(time.Hour, 2, clk.now)
	a := issue(t, s, "a")
	if !a.HttpOnly || a.SameSite != http.SameSiteStrictMode || a.Secure {
		t.Fatalf("cookie attributes %+v", a)
	}
	if v, ok := s.Lookup(withCookie(a)); !ok || v != "a" {
		t.Fatalf("lookup a = %q %v", v, ok)
	}
	clk.t = clk.t.Add(10 * time.Minute)
	b := issue(t, s, "b")
	c := issue(t, s, "c") // full: a (closest to expiry) goes
	if _, ok := s.Lookup(withCookie(a)); ok || s.Len() != 2 {
		t.Errorf("a survived eviction (len %d)", s.Len())
	}
	if v, _ := s.Lookup(withCookie(c)); v != "c" {
		t.Errorf("c = %q", v)
	}
	clk.t = clk.t.Add(time.Hour)
	if _, ok := s.Lookup(withCookie(b)); ok {
		t.Error("b outlived its expiry")
	}
	forged := &http.Cookie{Name: CookieName, Value: "00"}
	if _, ok := s.Lookup(withCookie(forged)); ok {
		t.Error("unknown id accepted")
	}
}

func TestCookieMayAuthorize(t *testing.T) {
	for _, c := range []struct {
		method string
		hdr    map[string]string
		want   bool
	}{
		{"GET", nil, true},
		{"POST", nil, false},
		{"POST", map[string]string{"Sec-Fetch-Site": "same-origin"}, true},
		{"POST", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"POST", map[string]string{"Sec-Fetch-Site": "none"}, false},
		{"DELETE", map[string]string{"Origin": "http://example.com"}, true},
		{"DELETE", map[string]string{"Origin": "http://evil.example"}, false},
		{"PUT", map[string]string{"Origin": "null"}, false},
	} {
		r := httptest.NewRequest(c.method, "http://example.com/api/v1/tasks", nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := CookieMayAuthorize(r); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.method, c.hdr, got, c.want)
		}
	}
}
