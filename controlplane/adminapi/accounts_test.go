package adminapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/accessapi"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/accounts"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/totp"
)

// clock is the server's injected time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type accountFixture struct {
	fixture
	clk *clock
}

func newAccountFixture(t *testing.T) accountFixture {
	t.Helper()
	db := pgtest.NewDB(t)
	pool := db.Pool(t, postgres.RoleAdmin)
	pub := publication.NewPublisher(pool, publication.PublisherOptions{})
	_, token, err := pub.CreateAPIToken(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	srv := httptest.NewServer(adminapi.New(adminapi.Config{Backend: pub, Tokens: pub, Accounts: accounts.New(pool), Now: clk.now}))
	t.Cleanup(srv.Close)
	return accountFixture{fixture: fixture{t: t, url: srv.URL, token: token, db: db}, clk: clk}
}

// signIn posts a password sign-in with its own cookie jar; it returns the
// status, the error's field and the client holding the session.
func (f accountFixture) signIn(user, pw, code string) (int, string, *http.Client) {
	f.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	body, _ := json.Marshal(accessapi.PasswordSignIn{Username: user, Password: pw, Code: code})
	req, _ := http.NewRequest("POST", f.url+accessapi.PasswordSignInPath, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e adminapi.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Field, c
}

func TestPasswordAndTOTPSignIn(t *testing.T) {
	f := newAccountFixture(t)
	mustStatus(t, "add", f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`, nil), http.StatusCreated)
	var setup accessapi.TOTPSetup
	mustStatus(t, "setup", f.call("POST", "/api/v1/users/alice/totp/setup", nil, &setup), http.StatusOK)
	key, err := totp.DecodeSecret(setup.Secret)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, "confirm", f.call("PUT", "/api/v1/users/alice/totp",
		`{"secret":"`+setup.Secret+`","code":"`+totp.Code(key, f.clk.now())+`"}`, nil), http.StatusNoContent)

	// A right password without the code: 401 on code, no failure counted.
	if st, field, _ := f.signIn("alice", "correct horse", ""); st != http.StatusUnauthorized || field != "code" {
		t.Fatalf("no code: %d %q", st, field)
	}
	f.clk.add(30 * time.Second) // the confirm used this step's code
	code := totp.Code(key, f.clk.now())
	st, _, c := f.signIn("alice", "correct horse", code)
	if st != http.StatusOK {
		t.Fatalf("password + TOTP sign-in: %d", st)
	}
	// The session is an operator's: it reads the admin-only account list.
	resp, err := c.Get(f.url + "/api/v1/users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("account session: GET /api/v1/users %d", resp.StatusCode)
	}
	// A code counts once.
	if st, field, _ := f.signIn("alice", "correct horse", code); st != http.StatusUnauthorized || field != "code" {
		t.Fatalf("replayed code: %d %q", st, field)
	}
	// Deleting the account ends its session.
	mustStatus(t, "delete", f.call("DELETE", "/api/v1/users/alice", nil, nil), http.StatusNoContent)
	resp, err = c.Get(f.url + "/api/v1/users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("deleted account's session: %d", resp.StatusCode)
	}
}

func TestTenWrongPasswordsLockFor15Minutes(t *testing.T) {
	f := newAccountFixture(t)
	mustStatus(t, "add", f.call("POST", "/api/v1/users", `{"username":"bob","password":"correct horse"}`, nil), http.StatusCreated)
	for i := 1; i <= 9; i++ {
		if st, _, _ := f.signIn("bob", "wrong password", ""); st != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d", i, st)
		}
	}
	if st, _, _ := f.signIn("bob", "wrong password", ""); st != http.StatusForbidden {
		t.Fatalf("10th wrong password: %d, want 403 (locked)", st)
	}
	if st, _, _ := f.signIn("bob", "correct horse", ""); st != http.StatusForbidden {
		t.Fatalf("right password while locked: %d, want 403", st)
	}
	var users accessapi.List[accessapi.UserView]
	f.call("GET", "/api/v1/users", nil, &users)
	if len(users.Items) != 1 || users.Items[0].LockedUntilMs != f.clk.now().Add(15*time.Minute).UnixMilli() {
		t.Fatalf("users %+v", users.Items)
	}
	f.clk.add(15*time.Minute - time.Second)
	if st, _, _ := f.signIn("bob", "correct horse", ""); st != http.StatusForbidden {
		t.Fatalf("right password a second before the lock ends: %d", st)
	}
	f.clk.add(time.Second)
	if st, _, _ := f.signIn("bob", "correct horse", ""); st != http.StatusOK {
		t.Fatalf("right password after the lock: %d", st)
	}
	var log accessapi.List[struct{ Outcome string }]
	f.call("GET", "/api/v1/signins?limit=200", nil, &log)
	counts := map[string]int{}
	for _, l := range log.Items {
		counts[l.Outcome]++
	}
	if counts["bad_password"] != 10 || counts["locked"] != 2 || counts["ok"] != 1 {
		t.Fatalf("sign-in log %v", counts)
	}
	// The lock is in the audit log.
	var audit struct{ Items []struct{ Action string } }
	f.call("GET", "/api/v1/audit?action=account.locked", nil, &audit)
	if len(audit.Items) != 1 {
		t.Fatalf("audit %+v", audit.Items)
	}
}
