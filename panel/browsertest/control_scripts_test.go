package browsertest

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// controlScriptsPage drives the Scripts page against ql3-control (ADR
// 0052): project demo's folder, a new file typed and saved through the
// editor, a stale save refused (the server keeps the other editor's
// version), and Run now: the script and its sibling run on the cluster's
// worker, the live log beside the editor.
func controlScriptsPage(t *testing.T, tab context.Context, tg target) {
	t.Helper()
	const base = "/api/v1/projects/demo/scripts"
	if code, body := apiRaw(t, tg, "PUT", base+"/content?path=lib/util.js", []byte("exports.x = 42;\n"), "If-None-Match", "*"); code != 201 {
		t.Fatalf("seed util.js: %d %s", code, body)
	}
	program := "const u = require('./util');\nconsole.log('hello', u.x, process.env.QL3_SCRIPT);\n"
	do(t, tab, "scripts page of project demo",
		chromedp.WaitVisible(css("#nav-scripts")),
		hash("#/scripts?project=demo"),
		chromedp.WaitVisible(css("#script-project")),
		poll(`!!document.querySelector('#script-list li[data-name="lib"]')`),
		jsRun("window.prompt = () => 'lib/main.js'"),
		chromedp.Click(css("#script-new-file")),
		chromedp.WaitVisible(css("#script-editor")),
		poll(textOf("#script-path")+" === 'lib/main.js'"),
		chromedp.SendKeys(css("#script-editor"), program),
		chromedp.Click(css("#script-save")),
		poll(`!document.querySelector('#script-state').dataset.dirty`),
	)
	if code, body := apiRaw(t, tg, "GET", base+"/content?path=lib/main.js", nil); code != 200 || body != program {
		t.Fatalf("saved content: %d %q", code, body)
	}
	other := "console.log('other editor');\n"
	if code, body := apiRaw(t, tg, "PUT", base+"/content?path=lib/main.js", []byte(other), "If-Match", "*"); code != 200 {
		t.Fatalf("other editor: %d %s", code, body)
	}
	do(t, tab, "stale save refused",
		chromedp.SendKeys(css("#script-editor"), "// mine\n"),
		chromedp.Click(css("#script-save")),
		chromedp.WaitVisible(css("#script-conflict")),
	)
	if _, body := apiRaw(t, tg, "GET", base+"/content?path=lib/main.js", nil); body != other {
		t.Fatalf("the stale save overwrote: %q", body)
	}
	do(t, tab, "reload, put the program back, run it on the worker",
		chromedp.Click(css("#script-reload")),
		poll(`document.querySelector('#script-editor') && document.querySelector('#script-editor').value === `+jsq(other)),
		clear("#script-editor"),
		chromedp.SendKeys(css("#script-editor"), program),
		chromedp.Click(css("#script-save")),
		poll(`!document.querySelector('#script-state').dataset.dirty`),
		chromedp.Click(css("#script-run")),
		poll(`document.querySelector('#script-log-state').dataset.status === 'succeeded'`),
	)
	if got := get(t, tab, "log", chromedp.Evaluate[string](textOf("#script-log"))); got != "hello 42 lib/main.js\n" {
		t.Errorf("run log %q", got)
	}
	shot(t, tab, tg.name+"-scripts-run")
}
