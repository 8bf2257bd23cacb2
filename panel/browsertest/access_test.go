package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ql3/ql3/core/totp"
)

// TestEdgeAccountSignIn drives the Access page and the account sign-in of
// a real ql3-edge: an account made on the page gets a second factor (the
// secret shown on the page, the code computed here as an authenticator app
// would), a scoped token is shown once, then the account signs in with
// password + code, and ten wrong passwords lock it with a message naming
// the unlock time, which the right password does not get past (the
// sign-in log: the success, ten bad passwords, the refusal while locked).
func TestEdgeAccountSignIn(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--log-format", "json"}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	waitReady(t, p, base+"/readyz", logPath)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	tg := target{name: "ql3-edge", base: base, token: strings.TrimSpace(string(tok))}
	accountSignInStory(t, tg)
}

// accountSignInStory is the Access page and account sign-in story, the
// same on both binaries (ADR 0049, 0060).
func accountSignInStory(t *testing.T, tg target) {
	ctx := tab(t)
	do(t, ctx, "open", chromedp.Navigate(tg.base+"/#/access"))
	signIn(t, ctx, tg)

	do(t, ctx, "add an account on the Access page",
		chromedp.WaitVisible(css("#nav-access")),
		hash("#/access"),
		chromedp.WaitVisible(css("#user-form")),
		chromedp.SendKeys(css("#new-user"), "alice"),
		chromedp.SendKeys(css("#new-user-password"), "correct horse"),
		chromedp.Click(css("#user-add")),
		chromedp.WaitVisible(css(`#users tr[data-user="alice"]`)),
		chromedp.Click(css(`#users tr[data-user="alice"] button.totp-start`)),
		chromedp.WaitVisible(css(`#users tr[data-user="alice"] code.totp-secret`)),
	)
	secret := get(t, ctx, "secret", chromedp.Evaluate[string](textOf(`#users tr[data-user="alice"] code.totp-secret`)))
	key, err := totp.DecodeSecret(secret)
	if err != nil {
		t.Fatalf("the page shows %q: %v", secret, err)
	}
	do(t, ctx, "confirm the second factor with a code",
		chromedp.SendKeys(css(`#users tr[data-user="alice"] input.totp-code`), totp.Code(key, time.Now())),
		chromedp.Click(css(`#users tr[data-user="alice"] button.totp-confirm`)),
		chromedp.WaitVisible(css(`#users tr[data-user="alice"] button.totp-off`)),
	)
	do(t, ctx, "a scoped token is shown once",
		chromedp.SendKeys(css("#token-name"), "ci"),
		chromedp.Click(css(`[data-field="token-scopes"] input[value="runs"]`)),
		chromedp.Click(css("#token-create")),
		poll(textOf("#new-token code")+".startsWith('ql3c_')"),
		// The control plane lists the token the test signed in with too.
		poll(`Array.from(document.querySelectorAll('#tokens tbody tr')).filter((r) => r.textContent.includes('runs')).length === 1`),
	)
	shot(t, ctx, tg.name+"-access")

	do(t, ctx, "sign out, then password + one-time code",
		chromedp.Click(css("#signout")),
		chromedp.WaitVisible(css("#signin-password")),
		chromedp.SendKeys(css("#pw-user"), "alice"),
		chromedp.SendKeys(css("#pw-pass"), "correct horse"),
		chromedp.Click(css("#pw-submit")),
		chromedp.WaitVisible(css("#pw-code")),
	)
	do(t, ctx, "the code signs in",
		chromedp.SendKeys(css("#pw-code"), totp.Code(key, time.Now().Add(30*time.Second))),
		chromedp.Click(css("#pw-submit")),
		chromedp.WaitVisible(css("#nav")),
		chromedp.WaitNotPresent(css("#signin-password")),
	)

	do(t, ctx, "sign out again", chromedp.Click(css("#signout")), chromedp.WaitVisible(css("#signin-password")),
		chromedp.SendKeys(css("#pw-user"), "alice"))
	wrong := func(i int, password string) string {
		do(t, ctx, "sign-in attempt",
			jsRun("document.getElementById('pw-err').textContent = ''"),
			clear("#pw-pass"),
			chromedp.SendKeys(css("#pw-pass"), password),
			chromedp.Click(css("#pw-submit")),
			poll(textOf("#pw-err")+".length > 0"),
		)
		return get(t, ctx, "message", chromedp.Evaluate[string](textOf("#pw-err")))
	}
	for i := 1; i <= 9; i++ {
		if msg := wrong(i, "wrong password"); !strings.Contains(msg, "wrong username or password") {
			t.Fatalf("attempt %d: %q", i, msg)
		}
	}
	if msg := wrong(10, "wrong password"); !strings.Contains(msg, "locked") || !strings.Contains(msg, "try again after") {
		t.Fatalf("10th wrong password: %q", msg)
	}
	shot(t, ctx, tg.name+"-locked")
	if msg := wrong(11, "correct horse"); !strings.Contains(msg, "locked") {
		t.Fatalf("the right password got past the lock: %q", msg)
	}
	var log struct {
		Items []struct {
			Outcome string `json:"outcome"`
		} `json:"items"`
	}
	apiGet(t, tg, "/api/v1/signins?limit=20", &log)
	if len(log.Items) != 12 || log.Items[0].Outcome != "locked" || log.Items[1].Outcome != "bad_password" || log.Items[11].Outcome != "ok" {
		t.Fatalf("sign-in log %+v", log.Items)
	}
}
