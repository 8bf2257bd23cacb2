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

// TestControlPanelLabelsAndViews drives the task list's labels, filters,
// total and saved views against a real ql3-control (ADR 0050's contract,
// ADR 0057): labels set in the task form show on the row and filter the
// list by a click; the label and enabled filters and the total work; a
// filter saved as a view of the project comes back as a link, and goes
// when deleted.
func TestControlPanelLabelsAndViews(t *testing.T) {
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
	shell := map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": "true"}}
	adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"project": "demo", "name": "京东签到", "spec": shell, "labels": []string{"京东", "daily"}}, 201)
	adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"project": "demo", "name": "京东领豆", "spec": shell, "labels": []string{"京东"}, "enabled": false}, 201)
	adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"project": "demo", "name": "backup", "spec": shell}, 201)

	tab := tab(t)
	do(t, tab, "open", chromedp.Navigate(base+"/#/tasks"))
	signIn(t, tab, tg)
	rows := `document.querySelectorAll("#tasks tbody tr").length`
	do(t, tab, "every task, its labels and the total",
		hash("#/tasks"),
		poll(rows+" === 3"),
		poll(textOf("#task-total")+` === "3 task(s)"`),
		poll(`document.querySelectorAll('#tasks tr[data-task="京东签到"] .labels a.label').length === 2`),
	)
	do(t, tab, "a label's link filters the list",
		chromedp.Click(css(`#tasks tr[data-task="京东签到"] .labels a.label`)),
		poll(`location.hash.includes("label=")`),
		poll(rows+" === 2"),
		poll(textOf("#task-total")+` === "2 task(s)"`),
	)
	do(t, tab, "label and enabled through the filter form",
		chromedp.SetValue(css("#task-enabled"), "true"),
		chromedp.Click(css(`#task-filter button[type="submit"]`)),
		poll(rows+` === 1 && document.querySelector('#tasks tr[data-task="京东签到"]') !== null`),
		poll(textOf("#task-total")+` === "1 task(s)"`),
	)
	do(t, tab, "save the filter as a view of the project",
		jsRun("window.prompt = () => '京东（开）'"),
		chromedp.WaitVisible(css("#save-view")),
		chromedp.Click(css("#save-view")),
		poll(`document.querySelector('#views [data-view="京东（开）"] a') !== null`),
	)
	do(t, tab, "the view brings the filter back",
		hash("#/tasks"),
		poll(rows+" === 3"),
		poll(`document.querySelector('#views [data-view="京东（开）"] a') !== null`),
		chromedp.Click(css(`#views [data-view="京东（开）"] a`)),
		poll(rows+` === 1 && location.hash.includes("enabled=true")`),
	)
	do(t, tab, "labels edited in the task form",
		hash("#/tasks"),
		poll(rows+" === 3"),
		chromedp.Click(css(`#tasks tr[data-task="backup"] a`)),
		chromedp.WaitVisible(css(`[data-field="labels"]`)),
		chromedp.SendKeys(css(`[data-field="labels"]`), "nightly, 备份"),
		chromedp.Click(css("#save")),
		poll(`location.hash === "#/tasks"`),
		poll(`document.querySelectorAll('#tasks tr[data-task="backup"] .labels a.label').length === 2`),
		chromedp.SetValue(css("#task-search"), "备份"),
		chromedp.Click(css(`#task-filter button[type="submit"]`)),
		poll(rows+` === 1 && document.querySelector('#tasks tr[data-task="backup"]') !== null`),
	)
	do(t, tab, "delete the view",
		jsRun("window.confirm = () => true"),
		chromedp.Click(css(`#views [data-view="京东（开）"] button.delete-view`)),
		poll(`document.querySelector('#views [data-view="京东（开）"]') === null`),
	)
	shot(t, tab, "ql3-control-task-labels")
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-control log:\n%s", out)
	}
}
