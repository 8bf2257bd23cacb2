package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestControlEnvPage drives the Environment page against a real
// ql3-control (ADR 0051): the page works on a project's store — add
// through the form (a refused name lands next to its field), no value in
// the page until revealed, disable/enable, pin, a second project's store
// kept apart.
func TestControlEnvPage(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	db := cluster.NewDB(t)
	dsn := db.DSN("")
	dir := t.TempDir()
	key := filepath.Join(dir, "env.key")
	ctl(t, nil, "env", "key-init", "--out", key)
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
	logPath := filepath.Join(dir, "control.log")
	p := start(t, "ql3-control", []string{"serve", "--dsn", dsn, "--listen", "127.0.0.1:0", "--log-format", "json",
		"--no-scheduler", "--secret-key-file", key}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "admin API listening", "addr")
	waitReady(t, p, base+"/readyz", logPath)
	tg := target{name: "ql3-control", base: base, token: strings.TrimSpace(string(out)), project: "demo"}
	adminCall(t, tg, "POST", "/api/v1/projects", map[string]string{"name": "demo"}, 201)
	adminCall(t, tg, "POST", "/api/v1/projects", map[string]string{"name": "other"}, 201)
	adminCall(t, tg, "POST", "/api/v1/projects/other/envs", map[string]string{"name": "ELSEWHERE", "value": "other-project-value"}, 201)

	tab := tab(t)
	do(t, tab, "open", chromedp.Navigate(base+"/#/envs?project=demo"))
	signIn(t, tab, tg)
	first, second := "pt_key=control-first-0001", "pt_key=control-second-0002"
	do(t, tab, "a reserved name is refused at its field",
		chromedp.WaitVisible(css("#nav-envs")),
		hash("#/envs?project=demo"),
		chromedp.WaitVisible(css("#new-env")),
		chromedp.Click(css("#new-env")),
		chromedp.WaitVisible(css("#env-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "QL3_NOPE"),
		chromedp.SendKeys(css(`[data-field="value"]`), first),
		chromedp.Click(css("#env-save")),
		poll(textOf(`[data-err="name"]`)+".includes('reserved')"),
	)
	do(t, tab, "create two JD_COOKIE entries in project demo",
		clear(`[data-field="name"]`),
		chromedp.SendKeys(css(`[data-field="name"]`), "JD_COOKIE"),
		chromedp.SendKeys(css(`[data-field="remarks"]`), "account one"),
		chromedp.Click(css("#env-save")),
		poll(`document.querySelectorAll('#envs tbody tr').length === 1`),
		chromedp.Click(css("#new-env")),
		chromedp.WaitVisible(css("#env-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "JD_COOKIE"),
		chromedp.SendKeys(css(`[data-field="value"]`), second),
		chromedp.Click(css("#env-save")),
		poll(`document.querySelectorAll('#envs tbody tr').length === 2`),
		poll(`location.hash.includes('project=demo')`),
	)
	if body := get(t, tab, "page text", chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(body, "control-first") ||
		strings.Contains(body, "control-second") || strings.Contains(body, "ELSEWHERE") {
		t.Fatal("a value (or another project's entry) is in the page")
	}
	do(t, tab, "reveal, disable, enable, pin",
		chromedp.Click(css(`#envs tbody tr:nth-child(1) button.reveal`)),
		poll(textOf(`#envs tbody tr:nth-child(1) code.revealed`)+" === "+jsq(first)),
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.toggle`)),
		poll(textOf(`#envs tbody tr:nth-child(2) td[data-label="Enabled"]`)+" === 'no'"),
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.toggle`)),
		poll(textOf(`#envs tbody tr:nth-child(2) td[data-label="Enabled"]`)+" === 'yes'"),
		chromedp.Click(css(`#envs tbody tr:nth-child(2) button.pin`)),
		poll(`document.querySelector('#envs tbody tr:nth-child(1) .mark') !== null`),
	)
	shot(t, tab, "ql3-control-env-list")
	do(t, tab, "the other project's store",
		clear("#env-project"),
		chromedp.SendKeys(css("#env-project"), "other"),
		chromedp.Click(css(`#env-filter button[type="submit"]`)),
		poll(`document.querySelectorAll('#envs tbody tr').length === 1 && `+textOf(`#envs tbody tr td[data-label="Name"]`)+".includes('ELSEWHERE')"),
	)
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-control log:\n%s", out)
	}
}
