package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// controlPost creates something through the control plane's admin API and
// decodes the answer; a serialization conflict between parallel
// publications of one project (503 after the server's own retries) is
// retried.
func controlPost(client *http.Client, tg target, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		req, err := http.NewRequest("POST", tg.base+path, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tg.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusCreated:
			if out != nil {
				return json.Unmarshal(b.Bytes(), out)
			}
			return nil
		case resp.StatusCode == http.StatusServiceUnavailable && try < 5:
			continue
		}
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b.String())
	}
}

// TestControlPanelFindsAmongTenThousandTasks: the panel against a real
// ql3-control with 10,000 tasks in a project (a hundred named 京东签到…)
// and one more (ADR 0057): in a browser set to Chinese every nav page is
// in Chinese; the task search finds exactly the hundred by a Chinese
// substring; the runs page names the 10,001st task and its task filter
// finds it by typing; the overview counts the tasks and the workers.
func TestControlPanelFindsAmongTenThousandTasks(t *testing.T) {
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
	adminCall(t, tg, "POST", "/api/v1/workers", map[string]string{"name": "router-1"}, 201)

	const n, workers = 10_000, 4
	began := time.Now()
	client := &http.Client{Timeout: 30 * time.Second}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name, command := fmt.Sprintf("task-%05d", i), fmt.Sprintf("echo %d", i)
				if i%100 == 0 {
					name = fmt.Sprintf("京东签到-%05d", i)
				}
				err := controlPost(client, tg, "/api/v1/tasks", map[string]any{"project": "demo", "name": name,
					"spec": map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": command}}}, nil)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("created %d tasks in %v", n, time.Since(began).Round(time.Millisecond))
	var last struct {
		ID string `json:"id"`
	}
	if err := controlPost(client, tg, "/api/v1/tasks", map[string]any{"project": "demo", "name": "第一万零一个任务",
		"spec": map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": "echo last"}}}, &last); err != nil {
		t.Fatal(err)
	}
	adminCall(t, tg, "POST", "/api/v1/tasks/"+last.ID+"/runs", map[string]any{"idempotencyKey": "last-1"}, 201)

	tab := tab(t)
	chineseBrowser(t, tab)
	do(t, tab, "open", chromedp.Navigate(base+"/"))
	signIn(t, tab, tg)
	// Every nav page in Chinese.
	var nav []string
	if err := json.Unmarshal([]byte(get(t, tab, "nav links", chromedp.Evaluate[string](
		`JSON.stringify(Array.from(document.querySelectorAll("#nav a")).filter((a) => !a.hidden).map((a) => a.getAttribute("href")))`))), &nav); err != nil {
		t.Fatal(err)
	}
	if len(nav) < 4 {
		t.Fatalf("nav links %v", nav)
	}
	for _, route := range append(nav, "#/tasks/new", "#/runs?task="+last.ID) {
		visit(t, tab, route)
		var rep pageReport
		if err := json.Unmarshal([]byte(get(t, tab, "check "+route, chromedp.Evaluate[string](pageCheck))), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Lang != "zh-CN" || len(rep.Missing) > 0 || len(rep.Bad) > 0 {
			shot(t, tab, "control-zh-"+sanitize(route))
			t.Errorf("%s: lang %s, keys without Chinese %v, not Chinese: %v", route, rep.Lang, rep.Missing, rep.Bad)
		}
	}
	// The overview counts the project's tasks and the workers.
	visit(t, tab, "#/overview")
	do(t, tab, "overview", poll(textOf("#ov-tasks")+`.includes("10001") && !!document.getElementById("ov-workers")`))
	shot(t, tab, "ql3-control-zh-overview")

	do(t, tab, "search by a Chinese substring",
		hash("#/tasks"),
		chromedp.WaitVisible(css("#task-search")),
		chromedp.SendKeys(css("#task-search"), "签到"),
		chromedp.Click(css(`#task-filter button[type="submit"]`)),
		poll(`location.hash.includes("q=") && document.querySelectorAll("#tasks tbody tr").length === 50 && !!document.getElementById("more-tasks") &&
			Array.from(document.querySelectorAll("#tasks tbody tr")).every((r) => r.dataset.task.startsWith("京东签到"))`),
	)
	names := `JSON.stringify(Array.from(document.querySelectorAll("#tasks tbody tr")).map((r) => r.dataset.task))`
	var found []string
	for page := 1; page <= 2; page++ {
		var rows []string
		if err := json.Unmarshal([]byte(get(t, tab, "rows", chromedp.Evaluate[string](names))), &rows); err != nil {
			t.Fatal(err)
		}
		found = append(found, rows...)
		if page == 1 {
			shot(t, tab, "ql3-control-search-10000")
			do(t, tab, "second page",
				chromedp.Click(css("#more-tasks")),
				poll(`location.hash.includes("cursor=") && document.querySelectorAll("#tasks tbody tr").length === 50 && !document.getElementById("more-tasks")`),
			)
		}
	}
	seen := map[string]bool{}
	for _, name := range found {
		if !strings.HasPrefix(name, "京东签到-") || seen[name] {
			t.Errorf("search result %q: not a 京东签到 task, or twice", name)
		}
		seen[name] = true
	}
	if len(seen) != 100 {
		t.Errorf("the search found %d tasks over two pages, want the 100 named 京东签到", len(seen))
	}

	// The runs page names the task beyond the 10,000th, and its filter
	// finds it by typing part of its name.
	do(t, tab, "runs list",
		hash("#/runs"),
		poll(`document.querySelectorAll("#runs tbody tr").length === 1`),
		poll(textOf(`#runs td[data-label="任务"]`)+` === "第一万零一个任务"`),
		hash("#/runs"),
		chromedp.WaitVisible(css("#filter-task")),
		chromedp.SendKeys(css("#filter-task"), "一万零一"),
		poll(`document.querySelectorAll("#task-suggestions option").length === 1`),
		chromedp.Click(css(`#run-filter button[type="submit"]`)),
		poll(`location.hash.includes("task=`+last.ID+`")`),
		poll(`document.querySelectorAll("#runs tbody tr").length === 1`),
	)
	shot(t, tab, "ql3-control-runs-of-task-10001")
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-control log (tail):\n%s", out[max(0, len(out)-8000):])
	}
}
