package browsertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestControlNotifyPage drives the Notifications page of a real
// ql3-control (started with --secret-key-file) on the harness's
// PostgreSQL: a webhook channel of the project through the form, "send
// test" reaching a fake receiver with the result shown, a rule, and the
// delivery log; the signing secret is never in the page and the key file
// is 0600.
func TestControlNotifyPage(t *testing.T) {
	var (
		mu   sync.Mutex
		hits []string
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, r.Header.Get("X-Ql3-Signature")+" "+string(b))
		mu.Unlock()
	}))
	defer hook.Close()

	cluster := pgtest.NewCluster(t)
	dsn := cluster.NewDB(t).DSN("")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "ql3-control"), "token", "create", "--name", "panel")
	cmd.Env = append(os.Environ(), "QL3_DSN="+dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	cancel()
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, stderr.String())
	}
	keyFile := filepath.Join(dir, "secret.key")
	ctl(t, nil, "env", "key-init", "--out", keyFile)
	logPath := filepath.Join(dir, "control.log")
	p := start(t, "ql3-control", []string{"serve", "--dsn", dsn, "--listen", "127.0.0.1:0", "--log-format", "json",
		"--secret-key-file", keyFile}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "admin API listening", "addr")
	waitReady(t, p, base+"/readyz", logPath)
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	tg := target{name: "ql3-control", base: base, token: strings.TrimSpace(string(out)), project: "demo"}
	adminCall(t, tg, "POST", "/api/v1/projects", map[string]string{"name": "demo"}, 201)

	tab := tab(t)
	do(t, tab, "open", chromedp.Navigate(base+"/#/notify"))
	signIn(t, tab, tg)
	const secret = "control-signing-SECRET-31"
	do(t, tab, "create the project's webhook channel",
		chromedp.WaitVisible(css("#nav-notify")),
		hash("#/notify"),
		chromedp.WaitVisible(css("#new-channel")),
		poll(textOf("#notify-project")+".includes('demo')"),
		chromedp.Click(css("#new-channel")),
		chromedp.WaitVisible(css("#channel-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "ops hook"),
		chromedp.SendKeys(css(`[data-field="settings.server"]`), hook.URL+"/ql3"),
		chromedp.SendKeys(css(`[data-field="settings.secret"]`), secret),
		chromedp.Click(css("#channel-save")),
		poll(`document.querySelectorAll('#channels tbody tr').length === 1`),
		poll(textOf(`#channels tbody tr td[data-label="Credentials set"]`)+" === 'secret, server'"),
	)
	do(t, tab, "send test",
		chromedp.Click(css(`#channels tbody tr button.send-test`)),
		poll(textOf(`#test-result`)+".includes('delivered') && "+textOf(`#test-result`)+".includes('HTTP 200')"),
	)
	shot(t, tab, "ql3-control-notify-overview")
	mu.Lock()
	if len(hits) != 1 || !strings.HasPrefix(hits[0], "sha256=") || !strings.Contains(hits[0], "test notification") {
		t.Fatalf("receiver got %q", hits)
	}
	mu.Unlock()
	do(t, tab, "create a rule",
		chromedp.Click(css("#new-rule")),
		chromedp.WaitVisible(css("#rule-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "failures"),
		chromedp.Click(css(`.rule-channel`)),
		chromedp.Click(css("#rule-save")),
		poll(`document.querySelectorAll('#rules tbody tr').length === 1`),
	)
	do(t, tab, "the delivery log shows the attempt",
		chromedp.Click(css("#nav-deliveries")),
		chromedp.WaitVisible(css("#deliveries")),
		poll(`document.querySelector('#deliveries tbody tr').dataset.status === 'delivered'`),
		poll(textOf(`#deliveries tbody tr td[data-label="Attempts"]`)+".includes('HTTP 200')"),
	)
	var rules struct {
		Items []struct{ Name string } `json:"items"`
	}
	apiGet(t, tg, "/api/v1/notify/rules?project=demo", &rules)
	if len(rules.Items) != 1 || rules.Items[0].Name != "failures" {
		t.Fatalf("rules %+v", rules)
	}
	for _, page := range []string{"#/notify", "#/notify/deliveries"} {
		body := get(t, tab, "page text "+page, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		if strings.Contains(body, secret) || strings.Contains(body, "/ql3\"") {
			t.Fatalf("%s shows a credential", page)
		}
		do(t, tab, "go "+page, hash(page))
	}
}
