package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// envPanelIDs reads the env entry ids in list order through the API.
func envPanelIDs(t *testing.T, tg target) []string {
	t.Helper()
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	apiGet(t, tg, "/api/v1/envs", &page)
	var ids []string
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// rowIDs is the JS list of the ids the env table shows, in order.
const rowIDs = `Array.from(document.querySelectorAll('#envs tbody tr')).map(r => r.dataset.id).join(',')`

// TestEdgeEnvPage drives the Environment page of a real ql3-edge: add
// through the form (a refused name lands next to its field), the value
// never in the page until revealed, enable/disable, reorder, pin, search,
// and an edit that leaves the write-only value alone.
func TestEdgeEnvPage(t *testing.T) {
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
	do(t, ctx, "open", chromedp.Navigate(base+"/#/envs"))
	signIn(t, ctx, tg)

	first, second := "pt_key=panel-first-0001", "pt_key=panel-second-0002"
	do(t, ctx, "a reserved name is refused at its field",
		chromedp.WaitVisible(css("#nav-envs")),
		hash("#/envs"),
		chromedp.WaitVisible(css("#new-env")),
		chromedp.Click(css("#new-env")),
		chromedp.WaitVisible(css("#env-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "QL3_NOPE"),
		chromedp.SendKeys(css(`[data-field="value"]`), first),
		chromedp.Click(css("#env-save")),
		poll(textOf(`[data-err="name"]`)+".includes('reserved')"),
	)
	shot(t, ctx, "ql3-edge-env-form-error")
	do(t, ctx, "create two JD_COOKIE entries",
		clear(`[data-field="name"]`),
		chromedp.SendKeys(css(`[data-field="name"]`), "JD_COOKIE"),
		chromedp.SendKeys(css(`[data-field="remarks"]`), "account one"),
		chromedp.Click(css("#env-save")),
		poll(`document.querySelectorAll('#envs tbody tr').length === 1`),
		chromedp.Click(css("#new-env")),
		chromedp.WaitVisible(css("#env-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "JD_COOKIE"),
		chromedp.SendKeys(css(`[data-field="value"]`), second),
		chromedp.SendKeys(css(`[data-field="remarks"]`), "account two"),
		chromedp.Click(css("#env-save")),
		poll(`document.querySelectorAll('#envs tbody tr').length === 2`),
	)
	if body := get(t, ctx, "page text", chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(body, "panel-first") || strings.Contains(body, "panel-second") {
		t.Fatal("a value is in the page before it was revealed")
	}
	ids := envPanelIDs(t, tg)
	if got := get(t, ctx, "order", chromedp.Evaluate[string](rowIDs)); got != strings.Join(ids, ",") {
		t.Fatalf("table order %s, API order %v", got, ids)
	}

	do(t, ctx, "reveal and hide",
		chromedp.Click(css(`#envs tbody tr:nth-child(1) button.reveal`)),
		poll(textOf(`#envs tbody tr:nth-child(1) code.revealed`)+" === "+jsq(first)),
		chromedp.Click(css(`#envs tbody tr:nth-child(1) button.reveal`)),
		poll(`document.querySelector('#envs tbody tr:nth-child(1) code.revealed').hidden`),
	)
	do(t, ctx, "disable and enable",
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.toggle`)),
		poll(textOf(`#envs tbody tr:nth-child(2) td[data-label="Enabled"]`)+" === 'no'"),
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.toggle`)),
		poll(textOf(`#envs tbody tr:nth-child(2) td[data-label="Enabled"]`)+" === 'yes'"),
	)
	do(t, ctx, "move the second up",
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.up`)),
		poll(rowIDs+" === "+jsq(ids[1]+","+ids[0])),
		chromedp.Click(css(`#envs tbody tr:nth-child(1) button.down`)),
		poll(rowIDs+" === "+jsq(ids[0]+","+ids[1])),
	)
	do(t, ctx, "pin the second: it goes on top",
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.pin`)),
		poll(rowIDs+" === "+jsq(ids[1]+","+ids[0])),
	)
	if got := strings.Join(envPanelIDs(t, tg), ","); got != ids[1]+","+ids[0] {
		t.Fatalf("after the pin the server's order is %s", got)
	}
	shot(t, ctx, "ql3-edge-env-list")
	do(t, ctx, "search by remarks",
		chromedp.SendKeys(css("#env-search"), "one"),
		chromedp.Click(css(`#env-filter button[type="submit"]`)),
		poll(`document.querySelectorAll('#envs tbody tr').length === 1 && `+textOf(`#envs tbody tr td[data-label="Remarks"]`)+" === 'account one'"),
		clear("#env-search"),
		chromedp.SendKeys(css("#env-search"), "nothing-like-this"),
		chromedp.Click(css(`#env-filter button[type="submit"]`)),
		chromedp.WaitVisible(css("#no-envs")),
		hash("#/envs"),
		poll(`document.querySelectorAll('#envs tbody tr').length === 2`),
	)
	// Edit: the value field starts empty and an edit without typing one
	// keeps the stored value.
	do(t, ctx, "edit remarks only",
		chromedp.Click(css(`#envs tbody tr:nth-child(2) a.edit`)),
		chromedp.WaitVisible(css("#env-form")),
		poll(`document.querySelector('[data-field="value"]').value === ''`),
		clear(`[data-field="remarks"]`),
		chromedp.SendKeys(css(`[data-field="remarks"]`), "account one, renamed"),
		chromedp.Click(css("#env-save")),
		poll(textOf(`#envs tbody tr:nth-child(2) td[data-label="Remarks"]`)+" === 'account one, renamed'"),
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.reveal`)),
		poll(textOf(`#envs tbody tr:nth-child(2) code.revealed`)+" === "+jsq(first)),
	)
	do(t, ctx, "delete",
		jsRun("window.confirm = () => true"),
		chromedp.Click(css(`#envs tbody tr:nth-child(1) button.delete`)),
		poll(`document.querySelectorAll('#envs tbody tr').length === 1`),
	)
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-edge log:\n%s", out)
	}
}
