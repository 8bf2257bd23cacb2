package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// chineseBrowser makes the tab's browser speak Chinese: navigator.languages
// and the Accept-Language header say zh-CN, as a browser set to Chinese does.
func chineseBrowser(t *testing.T, ctx context.Context) {
	t.Helper()
	ua := get(t, ctx, "user agent", chromedp.Evaluate[string](`navigator.userAgent`))
	if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "zh-CN,zh;q=0.9"}); err != nil {
		t.Fatalf("speak Chinese: %v", err)
	}
}

// pageCheck is what a page shows that is not in the panel's language: keys
// looked up that the language lacks, English catalog text or a raw key in
// the page (text, placeholders, labels), English phrases outside code.
const pageCheck = `(() => {
  const P = window.ql3Panel, cat = P.catalogs(), en = cat.en, zh = cat["zh-CN"];
  const english = new Set(Object.keys(en).filter((k) => zh[k] !== en[k] && /[A-Za-z]{3,}/.test(en[k])).map((k) => en[k]));
  const keys = new Set(Object.keys(en));
  const bad = [];
  const data = (e) => e.closest("[hidden],code,pre,.mono,#lang,[data-task],.task-name,.label");
  for (const root of [document.querySelector("header"), document.getElementById("main")]) {
    const tw = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n; (n = tw.nextNode());) {
      const s = n.textContent.trim();
      if (!s || data(n.parentElement)) continue;
      if (english.has(s)) bad.push("English text: " + s);
      else if (keys.has(s)) bad.push("raw key: " + s);
      else if (/[A-Za-z]{3,}[ ,:;]+[A-Za-z]{2,}/.test(s)) bad.push("English phrase: " + s);
    }
  }
  document.querySelectorAll("[placeholder],[aria-label],[data-label],[title]").forEach((e) => {
    if (data(e) && !e.matches("td")) return;
    for (const a of ["placeholder", "aria-label", "data-label", "title"]) {
      const v = e.getAttribute(a);
      if (v && (english.has(v) || keys.has(v))) bad.push(a + ": " + v);
    }
  });
  return JSON.stringify({missing: P.missingKeys(), bad, lang: document.documentElement.lang});
})()`

type pageReport struct {
	Missing []string `json:"missing"`
	Bad     []string `json:"bad"`
	Lang    string   `json:"lang"`
}

// visit shows a route and waits until its page replaced the previous one.
func visit(t *testing.T, ctx context.Context, route string) {
	do(t, ctx, "open "+route,
		jsRun(`document.getElementById("main").replaceChildren()`),
		hash(route),
		poll(`!!document.querySelector("#main h1, #main .formerr")`),
	)
	if e := get(t, ctx, "error on "+route, chromedp.Evaluate[string](textOf("#main .formerr"))); e != "" {
		t.Fatalf("%s shows an error: %s", route, e)
	}
}

// TestPanelInChinese: a browser set to Chinese gets the panel in Chinese on
// every page (sign-in, each nav page and the forms and details behind
// them): no key the catalog lacks, no English left in the page, no raw
// key; the language switch sticks across a reload.
func TestPanelInChinese(t *testing.T) {
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
	// Something on every page: a task with a trigger and labels, one that
	// failed, an env entry, a saved view.
	adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"name": "京东签到", "labels": []string{"京东"},
		"spec":     map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": "echo 你好"}},
		"triggers": []map[string]any{{"expression": "0 3 * * *", "timeZone": "Asia/Shanghai"}}}, 201)
	adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"name": "会失败",
		"spec": map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": "exit 3"}}}, 201)
	adminCall(t, tg, "POST", "/api/v1/tasks/会失败/runs", map[string]any{"idempotencyKey": "zh-1"}, 201)
	adminCall(t, tg, "POST", "/api/v1/envs", map[string]any{"name": "JD_COOKIE", "value": "pt_key=1", "remarks": "账号一"}, 201)
	adminCall(t, tg, "POST", "/api/v1/views", map[string]any{"name": "京东的", "filter": map[string]any{"label": "京东"}}, 201)
	var runs struct {
		Items []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
	}
	var task struct {
		ID string `json:"id"`
	}
	apiGet(t, tg, "/api/v1/tasks/京东签到", &task)
	var envs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	apiGet(t, tg, "/api/v1/envs", &envs)

	ctx := tab(t)
	chineseBrowser(t, ctx)
	do(t, ctx, "sign-in page in Chinese",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css("#token")),
		poll(textOf("#signin h1")+` === "登录" && document.documentElement.lang === "zh-CN"`),
	)
	signIn(t, ctx, tg)
	// The failed run has ended before its page is checked (its events and
	// error are on it).
	do(t, ctx, "the run failed", poll(`fetch("/api/v1/runs?status=failed").then((r) => r.json()).then((b) => b.items.length === 1)`))
	apiGet(t, tg, "/api/v1/runs?status=failed", &runs)

	routes := []string{"#/tasks/new", "#/tasks/" + task.ID + "/edit", "#/runs/" + runs.Items[0].ID, "#/runs?task=" + task.ID, "#/tasks?label=京东"}
	if len(envs.Items) == 1 {
		routes = append(routes, "#/envs/new", "#/envs/"+envs.Items[0].ID+"/edit")
	}
	// Every page of the nav, whoever added it.
	var nav []string
	if err := json.Unmarshal([]byte(get(t, ctx, "nav links", chromedp.Evaluate[string](
		`JSON.stringify(Array.from(document.querySelectorAll("#nav a")).filter((a) => !a.hidden).map((a) => a.getAttribute("href")))`))), &nav); err != nil {
		t.Fatal(err)
	}
	if len(nav) < 4 {
		t.Fatalf("nav links %v", nav)
	}
	for _, route := range append(nav, routes...) {
		visit(t, ctx, route)
		var rep pageReport
		if err := json.Unmarshal([]byte(get(t, ctx, "check "+route, chromedp.Evaluate[string](pageCheck))), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Lang != "zh-CN" || len(rep.Missing) > 0 || len(rep.Bad) > 0 {
			shot(t, ctx, "zh-"+sanitize(route))
			t.Errorf("%s: lang %s, keys without Chinese %v, not Chinese: %v", route, rep.Lang, rep.Missing, rep.Bad)
		}
	}
	visit(t, ctx, "#/tasks")
	if got := get(t, ctx, "task list heading", chromedp.Evaluate[string](textOf("#main h1"))); got != "任务" {
		t.Errorf("task list heading %q, want 任务", got)
	}
	shot(t, ctx, "ql3-edge-zh-task-list")
	visit(t, ctx, "#/overview")
	shot(t, ctx, "ql3-edge-zh-overview")

	// The switch: English, kept across a reload although the browser still
	// asks for Chinese; then back.
	do(t, ctx, "switch to English",
		chromedp.SetValue(css("#lang"), "en"),
		jsRun(`document.getElementById("lang").dispatchEvent(new Event("change"))`),
		poll(textOf(`#nav a[href="#/tasks"]`)+` === "Tasks"`),
		chromedp.Reload(),
		chromedp.WaitVisible(css("#nav")),
		poll(textOf(`#nav a[href="#/tasks"]`)+` === "Tasks" && document.documentElement.lang === "en" && `+textOf("#main h1")+` === "Overview"`),
		chromedp.SetValue(css("#lang"), "zh-CN"),
		jsRun(`document.getElementById("lang").dispatchEvent(new Event("change"))`),
		poll(textOf(`#nav a[href="#/tasks"]`)+` === "任务" && `+textOf("#main h1")+` === "概览"`),
	)
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-edge log:\n%s", fmt.Sprint(string(out)))
	}
}
