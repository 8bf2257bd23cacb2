package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/totp"
)

func (f *fixture) scopedToken(scopes string, expiresAtMs int64) CreatedToken {
	f.t.Helper()
	var tok CreatedToken
	f.decode("POST", "/api/v1/tokens", `{"name":"t","scopes":`+scopes+`,"expiresAtMs":`+strconv.FormatInt(expiresAtMs, 10)+`}`, http.StatusCreated, &tok)
	if !ValidTokenSyntax(tok.Token) || !strings.Contains(tok.Token, tok.ID) {
		f.t.Fatalf("token %q (id %s) has not the ql3c_ shape", tok.Token, tok.ID)
	}
	return tok
}

func TestScopedTokenDeniedOutsideItsScope(t *testing.T) {
	f := newFixture(t)
	f.createHello()
	runs := f.scopedToken(`["runs"]`, 0)
	as := func(tok, method, path, body string) int {
		return f.send(method, path, body, "Authorization", "Bearer "+tok).status
	}
	cases := []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/api/v1/tasks", "", 200},
		{"POST", "/api/v1/tasks/hello/runs", "", 201},
		{"GET", "/api/v1/runs", "", 200},
		{"DELETE", "/api/v1/tasks/hello", "", 403},
		{"POST", "/api/v1/tasks", helloTask, 403},
		{"GET", "/api/v1/envs", "", 403},
		{"GET", "/api/v1/tokens", "", 403},
		{"POST", "/api/v1/tokens", `{"name":"x","scopes":["admin"]}`, 403},
	}
	for _, c := range cases {
		if got := as(runs.Token, c.method, c.path, c.body); got != c.want {
			t.Errorf("runs token %s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}
	r := f.send("DELETE", "/api/v1/tasks/hello", "", "Authorization", "Bearer "+runs.Token)
	if e := r.errBody(t); e.Code != "forbidden" || !strings.Contains(e.Message, "runs") {
		t.Fatalf("refusal names the scopes: %+v", e)
	}
	ro := f.scopedToken(`["read-only"]`, 0)
	if got := as(ro.Token, "POST", "/api/v1/tasks/hello/runs", ""); got != 403 {
		t.Errorf("read-only token ran a task: %d", got)
	}
	envs := f.scopedToken(`["envs"]`, 0)
	if got := as(envs.Token, "POST", "/api/v1/envs", `{"name":"A","value":"b"}`); got != 201 {
		t.Errorf("envs token create: %d", got)
	}
	admin := f.scopedToken(`["admin"]`, 0)
	if got := as(admin.Token, "DELETE", "/api/v1/tokens/"+ro.ID, ""); got != 204 {
		t.Errorf("admin-scoped token revoke: %d", got)
	}
	if got := as(ro.Token, "GET", "/api/v1/tasks", ""); got != 401 {
		t.Errorf("revoked token: %d", got)
	}
	// The admin token keeps working.
	if r := f.call("DELETE", "/api/v1/tasks/hello", ""); r.status != 204 {
		t.Errorf("admin token: %d", r.status)
	}
}

func TestScopedTokenExpiry(t *testing.T) {
	f := newFixture(t)
	tok := f.scopedToken(`["read-only"]`, fixtureStart.Add(time.Hour).UnixMilli())
	if r := f.send("GET", "/api/v1/tasks", "", "Authorization", "Bearer "+tok.Token); r.status != 200 {
		t.Fatalf("fresh: %d", r.status)
	}
	f.clock.Advance(time.Hour)
	r := f.send("GET", "/api/v1/tasks", "", "Authorization", "Bearer "+tok.Token)
	if r.status != 401 || !strings.Contains(r.errBody(t).Message, "expired") {
		t.Fatalf("expired: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/tokens", `{"name":"old","scopes":["runs"],"expiresAtMs":1}`); r.status != 400 {
		t.Fatalf("expiry in the past accepted: %d", r.status)
	}
	var list List[APIToken]
	f.decode("GET", "/api/v1/tokens", "", 200, &list)
	if len(list.Items) != 1 || list.Items[0].Live || strings.Contains(string(f.call("GET", "/api/v1/tokens", "").body), "ql3c_") {
		t.Fatalf("list: %+v", list)
	}
}

func TestPasswordSignInLockout(t *testing.T) {
	f := newFixture(t)
	if r := f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	signIn := func(password, code string) response {
		return f.send("POST", PasswordSignInPath, `{"username":"alice","password":"`+password+`","code":"`+code+`"}`)
	}
	for i := 1; i <= 9; i++ {
		if r := signIn("wrong password", ""); r.status != 401 {
			t.Fatalf("failure %d: %d %s", i, r.status, r.body)
		}
	}
	r := signIn("wrong password", "")
	unlock := fixtureStart.Add(15 * time.Minute).UTC().Format(time.RFC3339)
	if r.status != 403 || !strings.Contains(r.errBody(t).Message, unlock) {
		t.Fatalf("10th failure: %d %s", r.status, r.body)
	}
	if r = signIn("correct horse", ""); r.status != 403 || !strings.Contains(r.errBody(t).Message, "locked") {
		t.Fatalf("right password while locked: %d %s", r.status, r.body)
	}
	f.clock.Advance(15 * time.Minute)
	r = signIn("correct horse", "")
	if r.status != 200 || !strings.Contains(r.header.Get("Set-Cookie"), "ql3_session=") {
		t.Fatalf("after the lock: %d %s", r.status, r.body)
	}
	var log List[SignInLine]
	f.decode("GET", "/api/v1/signins?limit=20", "", 200, &log)
	if len(log.Items) != 12 || log.Items[0].Outcome != "ok" || log.Items[1].Outcome != "locked" || log.Items[2].Outcome != "bad_password" {
		t.Fatalf("sign-in log: %+v", log.Items)
	}
	if strings.Contains(string(f.call("GET", "/api/v1/signins", "").body), "horse") {
		t.Fatal("the log holds a password")
	}
}

func TestPasswordAndTOTPSignIn(t *testing.T) {
	f := newFixture(t)
	f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`)
	var setup TOTPSetup
	f.decode("POST", "/api/v1/users/alice/totp/setup", "", 200, &setup)
	if !strings.HasPrefix(setup.URI, "otpauth://totp/ql3-edge:alice?") || !strings.Contains(setup.URI, "secret="+setup.Secret) {
		t.Fatalf("uri %s", setup.URI)
	}
	key, err := totp.DecodeSecret(setup.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.call("PUT", "/api/v1/users/alice/totp", `{"secret":"`+setup.Secret+`","code":"000000x"}`); r.status != 400 {
		t.Fatalf("bad code accepted: %d", r.status)
	}
	if r := f.call("PUT", "/api/v1/users/alice/totp", `{"secret":"`+setup.Secret+`","code":"`+totp.Code(key, fixtureStart)+`"}`); r.status != 204 {
		t.Fatalf("confirm: %d %s", r.status, r.body)
	}
	f.clock.Advance(time.Minute)
	signIn := func(code string) response {
		return f.send("POST", PasswordSignInPath, `{"username":"alice","password":"correct horse","code":"`+code+`"}`)
	}
	if r := signIn(""); r.status != 401 || r.errBody(t).Field != "code" {
		t.Fatalf("no code: %d %s", r.status, r.body)
	}
	code := totp.Code(key, f.clock.Now())
	r := signIn(code)
	if r.status != 200 {
		t.Fatalf("password + code: %d %s", r.status, r.body)
	}
	// The session works on the API.
	cookie := strings.Split(r.header.Get("Set-Cookie"), ";")[0]
	if r := f.send("GET", "/api/v1/tasks", "", "Cookie", cookie); r.status != 200 {
		t.Fatalf("session: %d", r.status)
	}
	if r := signIn(code); r.status != 401 {
		t.Fatalf("a replayed code was accepted: %d", r.status)
	}
	var users List[UserView]
	f.decode("GET", "/api/v1/users", "", 200, &users)
	if len(users.Items) != 1 || !users.Items[0].TOTP || strings.Contains(string(f.call("GET", "/api/v1/users", "").body), "argon2") {
		t.Fatalf("users: %+v", users)
	}
}

func TestAccountSessionEndsWithTheAccount(t *testing.T) {
	f := newFixture(t)
	f.call("POST", "/api/v1/users", `{"username":"bob","password":"correct horse"}`)
	r := f.send("POST", PasswordSignInPath, `{"username":"bob","password":"correct horse"}`)
	cookie := strings.Split(r.header.Get("Set-Cookie"), ";")[0]
	if r := f.send("GET", "/api/v1/tasks", "", "Cookie", cookie); r.status != 200 {
		t.Fatalf("session: %d", r.status)
	}
	f.call("DELETE", "/api/v1/users/bob", "")
	if r := f.send("GET", "/api/v1/tasks", "", "Cookie", cookie); r.status != 401 {
		t.Fatalf("session of a deleted account: %d", r.status)
	}
}
