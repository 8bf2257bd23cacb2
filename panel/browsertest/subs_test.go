package browsertest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEdgeSubscriptionsAndDependenciesPages drives the two pages of a
// real ql3-edge: a subscription to a local git repository through the
// form (a bad URL refused at its field), its preview showing the plan, a
// pull whose Run makes the task; a dependency added from the page whose
// install Run fails against a registry that has nothing (its state shown,
// the Run linked) and the registry setting saved.
func TestEdgeSubscriptionsAndDependenciesPages(t *testing.T) {
	dir := t.TempDir()
	origin := filepath.Join(dir, "origin")
	os.MkdirAll(origin, 0o755)
	os.WriteFile(filepath.Join(origin, "checkin.js"), []byte("// cron: 5 8 * * *\nconst $ = new Env('每日签到');\n"), 0o644)
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "one"}} {
		cmd := exec.Command("git", append([]string{"-C", origin}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	empty := httptest.NewServer(http.NotFoundHandler()) // a registry without any package
	defer empty.Close()

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
	do(t, ctx, "open", chromedp.Navigate(base+"/#/subs"))
	signIn(t, ctx, tg)

	do(t, ctx, "a URL with a password is refused at its field",
		chromedp.WaitVisible(css("#nav-subs")),
		hash("#/subs"),
		chromedp.WaitVisible(css("#new-sub")),
		chromedp.Click(css("#new-sub")),
		chromedp.WaitVisible(css("#sub-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "脚本库"),
		chromedp.SendKeys(css(`[data-field="url"]`), "https://me:pw@example.invalid/r.git"),
		chromedp.Click(css("#sub-save")),
		poll(textOf(`[data-err="url"]`)+".includes('password')"),
	)
	do(t, ctx, "create the subscription",
		clear(`[data-field="url"]`),
		chromedp.SendKeys(css(`[data-field="url"]`), "file://"+origin),
		chromedp.SendKeys(css(`[data-field="branch"]`), "main"),
		chromedp.Click(css("#sub-save")),
		poll(`document.querySelectorAll('#subs tbody tr').length === 1`),
		poll(textOf(`#subs tbody tr td[data-label="Folder"]`)+" === 'scripts/origin/'"),
	)
	do(t, ctx, "preview shows the plan",
		chromedp.Click(css(`#subs tbody tr button.preview`)),
		poll(`!!document.querySelector('#preview tr[data-action="add"][data-path="checkin.js"]')`),
		poll(textOf(`#preview tr[data-path="checkin.js"] td[data-label="Name"]`)+" === '每日签到'"),
	)
	shot(t, ctx, "ql3-edge-subscriptions-preview")
	do(t, ctx, "pull now starts a Run that makes the task",
		chromedp.Click(css(`#subs tbody tr button.pull`)),
		chromedp.WaitVisible(css("#pull-run")),
	)
	do(t, ctx, "its Run page follows the pull to its end",
		chromedp.Click(css("#pull-run")),
		poll(`location.hash.startsWith('#/runs/')`),
		poll(`!!document.querySelector('#run-status [data-status="succeeded"]')`),
	)
	var tasks struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	apiGet(t, tg, "/api/v1/tasks?label=sub:origin", &tasks)
	if len(tasks.Items) != 1 || tasks.Items[0].Name != "每日签到" {
		t.Fatalf("the pull made %+v", tasks.Items)
	}

	do(t, ctx, "set the node registry",
		hash("#/deps"),
		chromedp.WaitVisible(css("#dep-settings")),
		poll(`document.querySelector('#set-kind').value === 'node'`),
		chromedp.SendKeys(css("#set-registry"), empty.URL+"/"),
		chromedp.Click(css("#set-save")),
		poll(textOf("#set-saved")+" !== ''"),
	)
	do(t, ctx, "a bad package name is refused at its field",
		chromedp.SendKeys(css("#dep-name"), "--global"),
		chromedp.Click(css("#dep-add")),
		poll(textOf(`#dep-form [data-err="name"]`)+" !== ''"),
	)
	do(t, ctx, "add a package: its install Run fails against the empty registry",
		clear("#dep-name"),
		chromedp.SendKeys(css("#dep-name"), "left-pad"),
		chromedp.Click(css("#dep-add")),
		poll(`!!document.querySelector('#deps tr[data-dep="left-pad"]')`),
		poll(`(document.querySelector('#deps tr[data-dep="left-pad"]')||{}).dataset?.state === 'failed'`),
		poll(`!!document.querySelector('#deps tr[data-dep="left-pad"] a.dep-run')`),
	)
	shot(t, ctx, "ql3-edge-dependencies")
}
