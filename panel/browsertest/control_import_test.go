package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestControlImportWizard drives the Import page against a real
// ql3-control (ADR 0063): into project demo, an uploaded archive of a
// QingLong data folder and the same folder by path give the same plan
// digest; the plan says why the subscription is manual on the cluster;
// apply creates the tasks, env entries, dependency records and script
// files in demo and nothing in the other project; applying again says
// nothing changed.
func TestControlImportWizard(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	db := cluster.NewDB(t)
	dsn := db.DSN("")
	dir := t.TempDir()
	from, archive := copyQL(t, dir)
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

	tab := tab(t)
	do(t, tab, "open", chromedp.Navigate(base+"/#/import?project=demo"))
	signIn(t, tab, tg)
	do(t, tab, "inspect an upload into demo",
		chromedp.WaitVisible(css("#nav-import")),
		hash("#/import?project=demo"),
		chromedp.WaitVisible(css("#import-project")),
		chromedp.WaitVisible(css("#import-inspect")),
		chromedp.Click(css("#import-mode-upload")),
		chromedp.SetUploadFiles(css("#import-file"), []string{archive}),
		chromedp.Click(css("#import-inspect")),
		chromedp.WaitVisible(css("#import-digest")),
	)
	uploaded := get(t, tab, "digest", chromedp.Evaluate[string](textOf("#import-digest")))
	do(t, tab, "inspect a path",
		chromedp.Click(css("#import-mode-path")),
		chromedp.SendKeys(css("#import-from"), from),
		chromedp.Click(css("#import-inspect")),
		chromedp.WaitVisible(css("#import-rows tbody tr")),
	)
	byPath := get(t, tab, "digest", chromedp.Evaluate[string](textOf("#import-digest")))
	if !strings.Contains(byPath, "sha256:") || byPath != uploaded {
		t.Fatalf("digests: by path %q, uploaded %q", byPath, uploaded)
	}
	rows := get(t, tab, "rows", chromedp.Evaluate[string](`Array.from(document.querySelectorAll('#import-rows tbody tr')).map(r => r.dataset.kind + ':' + r.dataset.source + ':' + r.dataset.class).join(' ')`))
	for _, want := range []string{"task:7:requires_manual_action", "task:5:requires_shell_compatibility", "subscription:2:requires_manual_action"} {
		if !strings.Contains(rows, want) {
			t.Errorf("plan rows %q lack %s", rows, want)
		}
	}
	if strings.Contains(rows, "subscription:1:requires_manual_action") {
		t.Errorf("plan rows %q: the cluster refuses the subscription the edge imports", rows)
	}
	if page := get(t, tab, "page", chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(page, "AAA111") {
		t.Errorf("page text: a value shown")
	}
	shot(t, tab, "ql3-control-import-plan")

	do(t, tab, "apply",
		chromedp.Click(css("#import-apply")),
		poll(`document.querySelector('#import-status') && document.querySelector('#import-status').dataset.status === 'applied'`),
	)
	shot(t, tab, "ql3-control-import-applied")
	total := func(project string) int {
		t.Helper()
		code, body := apiRaw(t, tg, "GET", "/api/v1/tasks?project="+project+"&limit=1", nil)
		var page struct {
			Total int `json:"total"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &page) != nil {
			t.Fatalf("tasks of %s: %d %s", project, code, body)
		}
		return page.Total
	}
	// 11 imported tasks and the imported subscription's pull task.
	if n := total("demo"); n != 12 {
		t.Errorf("demo has %d tasks after the import, want 12", n)
	}
	if code, body := apiRaw(t, tg, "GET", "/api/v1/projects/demo/subscriptions", nil); code != 200 || strings.Count(body, `"url":"https://example.invalid/faker2.git"`) != 1 {
		t.Errorf("the imported subscription in demo: %d %s", code, body)
	}
	if n := total("other"); n != 0 {
		t.Errorf("the other project has %d tasks", n)
	}
	if code, body := apiRaw(t, tg, "GET", "/api/v1/projects/demo/scripts/content?path=jd_sign.js", nil); code != 200 || body == "" {
		t.Errorf("jd_sign.js in demo's scripts: %d", code)
	}
	if code, body := apiRaw(t, tg, "GET", "/api/v1/projects/demo/envs?q=JD_COOKIE", nil); code != 200 || strings.Count(body, `"name":"JD_COOKIE"`) < 2 {
		t.Errorf("JD_COOKIE entries in demo: %d %s", code, body)
	}
	if code, body := apiRaw(t, tg, "GET", "/api/v1/projects/demo/dependencies", nil); code != 200 || strings.Count(body, `"kind":`) != 4 {
		t.Errorf("dependency records in demo: %d %s", code, body)
	}
	do(t, tab, "apply again",
		chromedp.Click(css("#import-apply")),
		poll(`document.querySelector('#import-status').dataset.status === 'existing'`),
	)
	if n := total("demo"); n != 12 {
		t.Errorf("demo has %d tasks after the replay, want 12", n)
	}
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-control log:\n%s", out)
	}
}
