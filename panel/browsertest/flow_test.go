package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// target is one running server the panel is driven against.
type target struct {
	name    string // ql3-edge | ql3-control
	base    string // http://127.0.0.1:port
	token   string // admin token
	release string // directory the test's commands wait on
	// project is set on the control plane (its create form asks for one).
	project string
}

// poll waits until the JS expression is truthy.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))
}

// hash moves the single-page panel to a route (a fragment change is not a
// navigation chromedp could wait for).
func hash(h string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[string]("location.hash = "+jsq(h))(ctx, t)
		return err
	})
}

// clear empties an input (and tells the page, as typing would).
func clear(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool]("(e => { e.value = ''; e.dispatchEvent(new Event('input')); return true })(document.querySelector("+jsq(sel)+"))")(ctx, t)
		return err
	})
}

// jsRun evaluates a statement in the page.
func jsRun(stmt string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool]("(() => { "+stmt+"; return true })()")(ctx, t)
		return err
	})
}

// apiGet reads one resource with the bearer token and decodes it.
func apiGet(t *testing.T, tg target, path string, out any) {
	t.Helper()
	req, err := http.NewRequest("GET", tg.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tg.token)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// css is a CSS selector for the first match.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// jsq quotes s as a JS string literal.
func jsq(s string) string { return fmt.Sprintf("%q", s) }

func textOf(sel string) string {
	return "((document.querySelector(" + jsq(sel) + ")||{}).textContent||'')"
}

// evalAwait evaluates a promise-returning expression.
func evalAwait[T any](expr string) chromedp.Action[T] {
	return chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise)
}

// blockingCommand prints "first", waits for a release file named after the
// Run, then prints "second": the test decides when the Run may finish.
func blockingCommand(dir string) string {
	return `echo first; while [ ! -e "` + dir + `/$QL3_RUN_ID" ]; do sleep 0.05; done; echo second`
}

// signIn fills the sign-in form the page shows.
func signIn(t *testing.T, ctx context.Context, tg target) {
	do(t, ctx, "sign in",
		chromedp.WaitVisible(css("#token")),
		clear("#token"),
		chromedp.SendKeys(css("#token"), tg.token),
		chromedp.Click(css("#signin-submit")),
		chromedp.WaitVisible(css("#nav")),
		chromedp.WaitNotPresent(css("#signin")),
	)
}

// createThroughForm is the part both servers pass: sign in (a wrong token
// refused at its field), create a task through the form (an invalid cron
// refused next to its field, the preview across a DST change). It returns
// the signed-in tab on the task list.
func createThroughForm(t *testing.T, tg target) context.Context {
	ctx := tab(t)
	prefix := tg.name + "-"

	// A wrong token is refused next to the token field.
	do(t, ctx, "wrong token",
		chromedp.Navigate(tg.base+"/"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), "ql3c_0000000000000000_"+strings.Repeat("0", 64)),
		chromedp.Click(css("#signin-submit")),
		poll(textOf(`[data-err="token"]`)+".length > 0"),
	)
	signIn(t, ctx, tg)

	// Create through the form; the server's field error lands next to the
	// trigger's expression input.
	do(t, ctx, "open the form",
		chromedp.Click(css("#new-task")),
		chromedp.WaitVisible(css("#task-form")),
	)
	// The form starts with the CLI's defaults (#27): one trigger row and a
	// 24 h timeout (ql3-edge task add --run-timeout, the spec's default).
	rows := get(t, ctx, "trigger rows", chromedp.Evaluate[int](`document.querySelectorAll('#triggers .trigger').length`))
	timeout := get(t, ctx, "timeout", chromedp.Evaluate[string](`document.querySelector('[data-field="spec.timeoutMs"]').value`))
	if rows != 1 || timeout != "86400" {
		t.Errorf("new-task form: %d trigger rows, timeout %q s; want 1 row and 86400 s (24 h)", rows, timeout)
	}
	shot(t, ctx, prefix+"task-form-defaults")
	do(t, ctx, "fill the form",
		chromedp.SendKeys(css(`[data-field="name"]`), "panel-demo"),
		chromedp.SendKeys(css(`[data-field="spec.shell.command"]`), blockingCommand(tg.release)),
		chromedp.SendKeys(css(`[data-field="triggers[0].expression"]`), "61 2 * * *"),
		clear(`[data-field="triggers[0].timeZone"]`),
		chromedp.SendKeys(css(`[data-field="triggers[0].timeZone"]`), "America/New_York"),
	)
	if tg.project != "" {
		do(t, ctx, "project", chromedp.SetValue(css(`[data-field="project"]`), tg.project))
	}
	do(t, ctx, "submit an invalid cron",
		chromedp.Click(css("#save")),
		poll(textOf(`[data-err="triggers[0].expression"]`)+".length > 0"),
	)
	fieldErr := get(t, ctx, "field error", chromedp.Text(css(`[data-err="triggers[0].expression"]`)))
	invalid := get(t, ctx, "aria-invalid", chromedp.AttributeValue(css(`[data-field="triggers[0].expression"]`), "aria-invalid")).Value
	if !strings.Contains(fieldErr, "61") || invalid != "true" {
		t.Fatalf("field error %q (aria-invalid %q): want the server's message about 61 next to the expression", fieldErr, invalid)
	}
	shot(t, ctx, prefix+"task-form-field-error")

	// The preview follows the typing; from 2027-03-10 in New York it
	// crosses the spring-forward change of 2027-03-14.
	do(t, ctx, "preview across DST",
		clear(`[data-field="triggers[0].expression"]`),
		chromedp.SendKeys(css(`[data-field="triggers[0].expression"]`), "30 2 * * *"),
		chromedp.SendKeys(css(`input.from`), "2027-03-10"),
		poll(`document.querySelectorAll('ol.preview li').length === 8 && !!document.querySelector('ol.preview li[data-mark="gap"]')`),
	)
	// Correcting the field clears its error at once, not at the next submit.
	staleErr := get(t, ctx, "field error after the fix", chromedp.Text(css(`[data-err="triggers[0].expression"]`)))
	stillInvalid := get(t, ctx, "aria-invalid after the fix", chromedp.Evaluate[bool](`document.querySelector('[data-field="triggers[0].expression"]').hasAttribute("aria-invalid")`))
	if staleErr != "" || stillInvalid {
		t.Errorf("after correcting the expression: field error %q, aria-invalid %v; want both cleared", staleErr, stillInvalid)
	}
	gapNote := get(t, ctx, "gap entry", chromedp.Text(css(`ol.preview li[data-mark="gap"]`)))
	if !strings.Contains(gapNote, "2027-03-14 03:00:00") || !strings.Contains(gapNote, "DST gap") {
		t.Errorf("gap entry %q: want 2027-03-14 03:00 marked as a DST gap", gapNote)
	}
	shot(t, ctx, prefix+"task-form-preview-dst")
	do(t, ctx, "save",
		chromedp.Click(css("#save")),
		chromedp.WaitVisible(css(`#tasks tr[data-task="panel-demo"]`)),
	)
	return ctx
}

// panelFlow is the edge's walk-through: the form, then a Run whose log
// arrives live, a cancelled running Run, the runs list, sign-out and the
// cross-origin refusal.
func panelFlow(t *testing.T, tg target) {
	ctx := createThroughForm(t, tg)
	prefix := tg.name + "-"

	// Run now: the Run appears and its log lines arrive while it runs.
	runID := runNow(t, ctx, tg)
	do(t, ctx, "first line live",
		poll(textOf("#log")+".includes('first') && "+textOf("#run-status")+".includes('running')"),
	)
	logText := get(t, ctx, "log so far", chromedp.TextContent(css("#log")))
	if strings.Contains(logText, "second") {
		t.Fatalf("log shows %q before the Run was released", logText)
	}
	shot(t, ctx, prefix+"run-live-log")
	release(t, tg, runID)
	do(t, ctx, "second line live, tail stops at completion",
		poll(textOf("#log")+".includes('second') && "+textOf("#run-status")+".includes('succeeded')"),
		poll(`document.querySelector('#log-state').getAttribute('data-complete') === 'true'`),
	)
	shot(t, ctx, prefix+"run-succeeded")

	// Cancel a running Run.
	do(t, ctx, "back to tasks", hash("#/tasks"), chromedp.WaitVisible(css(`#tasks tr[data-task="panel-demo"]`)))
	cancelled := runNow(t, ctx, tg)
	do(t, ctx, "cancel",
		poll(textOf("#log")+".includes('first') && "+textOf("#run-status")+".includes('running')"),
		chromedp.Click(css("#cancel")),
		poll(textOf("#run-status")+".includes('cancelled')"),
	)
	// Runs list with a filter: exactly the cancelled one.
	do(t, ctx, "runs filtered by status",
		hash("#/runs?status=cancelled"),
		poll(`document.querySelectorAll('#runs tbody tr').length === 1`),
		poll(textOf("#runs")+".includes("+jsq(cancelled[:13])+")"),
	)
	do(t, ctx, "all runs", hash("#/runs"), poll(`document.querySelectorAll('#runs tbody tr').length === 2`))
	shot(t, ctx, prefix+"runs-list")
	do(t, ctx, "task list", hash("#/tasks"), poll(textOf(`#tasks tr[data-task="panel-demo"]`)+".includes('cancelled')"))
	shot(t, ctx, prefix+"task-list")

	// Edit through the form (a new revision), disable, enable.
	do(t, ctx, "edit",
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] td a`)),
		chromedp.WaitVisible(css("#task-form")),
		poll(`document.querySelectorAll('ol.preview li').length > 0`), // the stored trigger's preview
		clear(`[data-field="spec.timeoutMs"]`),
		chromedp.SendKeys(css(`[data-field="spec.timeoutMs"]`), "120"),
		clear(`[data-field="triggers[0].expression"]`),
		chromedp.SendKeys(css(`[data-field="triggers[0].expression"]`), "45 2 * * *"),
		chromedp.Click(css("#save")),
		chromedp.WaitVisible(css(`#tasks tr[data-task="panel-demo"]`)),
	)
	var edited struct {
		Revision int64 `json:"revision"`
		Spec     struct {
			TimeoutMs int64 `json:"timeoutMs"`
		} `json:"spec"`
		Triggers []struct {
			Expression string `json:"expression"`
			TimeZone   string `json:"timeZone"`
		} `json:"triggers"`
	}
	apiGet(t, tg, "/api/v1/tasks/panel-demo", &edited) // the edge resolves names
	if edited.Revision != 2 || edited.Spec.TimeoutMs != 120000 {
		t.Errorf("after the edit: revision %d, timeout %d ms; want 2, 120000", edited.Revision, edited.Spec.TimeoutMs)
	}
	if len(edited.Triggers) != 1 || edited.Triggers[0].Expression != "45 2 * * *" || edited.Triggers[0].TimeZone != "America/New_York" {
		t.Errorf("after the edit: triggers %+v; want one, 45 2 * * * in America/New_York", edited.Triggers)
	}
	do(t, ctx, "disable, enable",
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] .toggle`)),
		poll(textOf(`#tasks tr[data-task="panel-demo"] .toggle`)+" === 'Enable'"),
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] .toggle`)),
		poll(textOf(`#tasks tr[data-task="panel-demo"] .toggle`)+" === 'Disable'"),
	)

	// A phone screen: the list becomes cards, nothing wider than the screen.
	do(t, ctx, "phone viewport",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		hash("#/runs"), hash("#/tasks"),
		poll(textOf(`#tasks tr[data-task="panel-demo"]`)+".includes('cancelled')"),
	)
	if w := get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("on a 390 px phone screen the task list is %d px wide", w)
	}
	shot(t, ctx, prefix+"task-list-phone")
	do(t, ctx, "desktop viewport", chromedp.ResetViewport())

	// Delete asks first: a dismissed confirmation deletes nothing.
	do(t, ctx, "delete dismissed",
		jsRun(`window.confirm = () => false`),
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] .delete`)),
	)
	apiGet(t, tg, "/api/v1/tasks/panel-demo", &edited)
	do(t, ctx, "delete confirmed",
		jsRun(`window.confirm = () => true`),
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] .delete`)),
		chromedp.WaitNotPresent(css(`#tasks tr[data-task="panel-demo"]`)),
	)

	signOutAndCrossOrigin(t, ctx, tg)
}

// signOutAndCrossOrigin: after sign-out the cookie changes nothing; signed
// in again, a page on another origin cannot create a task.
func signOutAndCrossOrigin(t *testing.T, ctx context.Context, tg target) {
	// Sign out: the cookie no longer changes anything.
	do(t, ctx, "sign out",
		chromedp.Click(css("#signout")),
		chromedp.WaitVisible(css("#signin")),
	)
	status := get(t, ctx, "change after sign-out", evalAwait[int](`fetch('/api/v1/tasks/panel-demo/disable', {method: 'POST'}).then(r => r.status)`))
	if status != 401 {
		t.Errorf("a change after sign-out answered %d, want 401", status)
	}
	crossOrigin(t, ctx, tg)
}

// runNow presses the task's "Run now" and returns the new Run's id.
func runNow(t *testing.T, ctx context.Context, tg target) string {
	do(t, ctx, "run now",
		chromedp.Click(css(`#tasks tr[data-task="panel-demo"] .run-now`)),
		poll(`location.hash.startsWith('#/runs/')`),
		chromedp.WaitVisible(css("#run-status")),
	)
	return get(t, ctx, "run id", chromedp.Evaluate[string](`location.hash.slice(7)`))
}

func release(t *testing.T, tg target, runID string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tg.release, runID), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// crossOrigin: while the user is signed in, a page from another origin
// (another port on the same host: same-site, so SameSite=Strict alone
// would still send the cookie) tries to create a task with a no-cors
// fetch, a CORS fetch and a text/plain form post. Nothing is created.
func crossOrigin(t *testing.T, ctx context.Context, tg target) {
	signIn(t, ctx, tg)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><title>evil</title><iframe name="sink"></iframe><script src="/evil.js"></script>`)
		case "/evil.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, evilJS(tg))
		}
	}))
	defer evil.Close()
	evilTab := tab(t)
	signedIn := get(t, ctx, "still signed in", evalAwait[bool](`fetch('/api/v1/session').then(r => r.json()).then(b => b.signedIn)`))
	if !signedIn {
		t.Fatal("the panel tab is not signed in; the cross-origin check would be vacuous")
	}
	do(t, evilTab, "foreign page", chromedp.Navigate(evil.URL+"/#"+tg.base), poll(`document.title === 'sent'`))
	results := get(t, evilTab, "results", chromedp.Evaluate[string](`window.results.join(',')`))
	t.Logf("foreign page saw: %s", results)
	req, _ := http.NewRequest("GET", tg.base+"/api/v1/tasks/evil", nil)
	req.Header.Set("Authorization", "Bearer "+tg.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /api/v1/tasks/evil after the foreign page: %d; the cross-site create went through", resp.StatusCode)
	}
}

func evilJS(tg target) string {
	project := ""
	if tg.project != "" {
		project = `project: ` + jsq(tg.project) + `, `
	}
	return `"use strict";
window.results = [];
const base = decodeURIComponent(location.hash.slice(1));
const body = JSON.stringify({` + project + `name: "evil", spec: {kind: "qinglong/command@v1", shell: {command: "echo pwned"}}});
const form = document.createElement("form");
form.method = "POST"; form.action = base + "/api/v1/tasks"; form.enctype = "text/plain"; form.target = "sink";
const inp = document.createElement("input"); inp.name = body.slice(0, -1) + ', "x": "'; inp.value = '"}';
form.appendChild(inp); document.body.appendChild(form);
const formDone = new Promise((res) => { document.querySelector("iframe").addEventListener("load", () => res("form")); setTimeout(() => res("form-timeout"), 5000); });
form.submit();
Promise.allSettled([
  fetch(base + "/api/v1/tasks", {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body}).then(() => "no-cors sent"),
  fetch(base + "/api/v1/tasks", {method: "POST", credentials: "include", headers: {"Content-Type": "application/json"}, body}).then((r) => "cors " + r.status),
  formDone,
]).then((rs) => { window.results = rs.map((r) => r.status + ":" + (r.value || r.reason)); document.title = "sent"; });
`
}
