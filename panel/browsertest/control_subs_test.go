package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// controlSubsPage drives the Subscriptions page against ql3-control (ADR
// 0061): project demo's subscriptions, a URL with a password refused at
// its field, a subscription to a local git repository made through the
// form, its preview, and Pull now: a Run of the system task that the
// control plane's own executor runs, which publishes the tree into the
// project's scripts folder and makes the task.
func controlSubsPage(t *testing.T, tab context.Context, tg target) {
	t.Helper()
	origin := filepath.Join(t.TempDir(), "origin")
	if err := os.MkdirAll(origin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(origin, "checkin.js"), []byte("// cron: 5 8 * * *\nconst $ = new Env('集群签到');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "one"}} {
		cmd := exec.Command("git", append([]string{"-C", origin}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	do(t, tab, "subscriptions of project demo; a URL with a password is refused at its field",
		chromedp.WaitVisible(css("#nav-subs")),
		hash("#/subs?project=demo"),
		chromedp.WaitVisible(css("#sub-project")),
		chromedp.WaitVisible(css("#new-sub")),
		chromedp.Click(css("#new-sub")),
		chromedp.WaitVisible(css("#sub-form")),
		chromedp.SendKeys(css(`[data-field="name"]`), "集群脚本库"),
		chromedp.SendKeys(css(`[data-field="url"]`), "https://me:pw@example.invalid/r.git"),
		chromedp.Click(css("#sub-save")),
		poll(textOf(`[data-err="url"]`)+".includes('password')"),
	)
	do(t, tab, "create the subscription",
		clear(`[data-field="url"]`),
		chromedp.SendKeys(css(`[data-field="url"]`), "file://"+origin),
		chromedp.SendKeys(css(`[data-field="branch"]`), "main"),
		chromedp.Click(css("#sub-save")),
		poll(`location.hash.includes('project=demo')`),
		poll(`document.querySelectorAll('#subs tbody tr').length === 1`),
		poll(textOf(`#subs tbody tr td[data-label="Folder"]`)+" === 'scripts/origin/'"),
	)
	do(t, tab, "preview shows the plan",
		chromedp.Click(css(`#subs tbody tr button.preview`)),
		poll(`!!document.querySelector('#preview tr[data-action="add"][data-path="checkin.js"]')`),
		poll(textOf(`#preview tr[data-path="checkin.js"] td[data-label="Name"]`)+" === '集群签到'"),
	)
	shot(t, tab, tg.name+"-subscriptions-preview")
	do(t, tab, "pull now: a Run the control plane runs, followed to its end",
		chromedp.Click(css(`#subs tbody tr button.pull`)),
		chromedp.WaitVisible(css("#pull-run")),
		chromedp.Click(css("#pull-run")),
		poll(`location.hash.startsWith('#/runs/')`),
		poll(`!!document.querySelector('#run-status [data-status="succeeded"]')`),
	)
	var tasks struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	apiGet(t, tg, "/api/v1/tasks?project=demo&label=sub:origin", &tasks)
	if len(tasks.Items) != 1 || tasks.Items[0].Name != "集群签到" {
		t.Fatalf("the pull made %+v", tasks.Items)
	}
	if code, body := apiRaw(t, tg, "GET", "/api/v1/projects/demo/scripts/content?path=origin/checkin.js", nil); code != 200 || body == "" {
		t.Fatalf("the pull did not publish checkin.js: %d %q", code, body)
	}
}
