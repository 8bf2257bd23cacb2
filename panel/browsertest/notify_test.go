package browsertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEdgeNotifyPage drives the Notifications page of a real ql3-edge: a
// webhook channel through the form (its signing secret never in the page),
// "send test" reaching a fake receiver with the result shown, a rule, and
// the delivery log with the attempt.
func TestEdgeNotifyPage(t *testing.T) {
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
	ctx := tab(t)
	do(t, ctx, "open", chromedp.Navigate(base+"/#/notify"))
	signIn(t, ctx, tg)

	const secret = "panel-signing-SECRET-77"
	do(t, ctx, "a channel without its server is refused at the field",
		chromedp.WaitVisible(css("#nav-notify")),
		hash("#/notify"),
		chromedp.WaitVisible(css("#new-channel")),
		chromedp.Click(css("#new-channel")),
		chromedp.WaitVisible(css("#channel-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "ops hook"),
		chromedp.Click(css("#channel-save")),
		poll(textOf(`[data-err="settings.server"]`)+".includes('required')"),
	)
	do(t, ctx, "create the webhook channel",
		chromedp.SendKeys(css(`[data-field="settings.server"]`), hook.URL+"/ql3"),
		chromedp.SendKeys(css(`[data-field="settings.secret"]`), secret),
		chromedp.Click(css("#channel-save")),
		poll(`document.querySelectorAll('#channels tbody tr').length === 1`),
		poll(textOf(`#channels tbody tr td[data-label="Credentials set"]`)+" === 'secret, server'"),
	)
	do(t, ctx, "send test",
		chromedp.Click(css(`#channels tbody tr button.send-test`)),
		poll(textOf(`#test-result`)+".includes('delivered') && "+textOf(`#test-result`)+".includes('HTTP 200')"),
	)
	shot(t, ctx, "ql3-edge-notify-overview")
	mu.Lock()
	if len(hits) != 1 || !strings.HasPrefix(hits[0], "sha256=") || !strings.Contains(hits[0], "test notification") {
		t.Fatalf("receiver got %q", hits)
	}
	mu.Unlock()
	do(t, ctx, "create a rule",
		chromedp.Click(css("#new-rule")),
		chromedp.WaitVisible(css("#rule-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "failures"),
		chromedp.Click(css(`.rule-channel`)),
		chromedp.SendKeys(css(`[data-field="quiet"]`), "23:00-07:00"),
		clear(`[data-field="quiet.zone"]`),
		chromedp.SendKeys(css(`[data-field="quiet.zone"]`), "Asia/Shanghai"),
		chromedp.Click(css("#rule-save")),
		poll(`document.querySelectorAll('#rules tbody tr').length === 1`),
		poll(textOf(`#rules tbody tr td[data-label="Quiet hours"]`)+".includes('Asia/Shanghai')"),
	)
	do(t, ctx, "the delivery log shows the attempt",
		chromedp.Click(css("#nav-deliveries")),
		chromedp.WaitVisible(css("#deliveries")),
		poll(`document.querySelector('#deliveries tbody tr').dataset.status === 'delivered'`),
		poll(textOf(`#deliveries tbody tr td[data-label="Attempts"]`)+".includes('HTTP 200')"),
	)
	shot(t, ctx, "ql3-edge-notify-deliveries")
	var rules struct {
		Items []struct{ Name string } `json:"items"`
	}
	apiGet(t, tg, "/api/v1/notify/rules", &rules)
	if len(rules.Items) != 1 || rules.Items[0].Name != "failures" {
		t.Fatalf("rules %+v", rules)
	}
	for _, page := range []string{"#/notify", "#/notify/deliveries"} {
		body := get(t, ctx, "page text "+page, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		if strings.Contains(body, secret) || strings.Contains(body, "/ql3\"") {
			t.Fatalf("%s shows a credential", page)
		}
		do(t, ctx, "go "+page, hash(page))
	}
}
