package browsertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// postTask creates one task through the API (safe from any goroutine).
func postTask(client *http.Client, base, name, command string) error {
	body, err := json.Marshal(map[string]any{"name": name, "spec": map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": command}}})
	if err != nil {
		return err
	}
	resp, err := client.Post(base+"/api/v1/tasks", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("create %s: %d %s", name, resp.StatusCode, b.String())
	}
	return nil
}

// TestPanelFindsAmongTenThousandTasks: with 10,000 tasks (a hundred of
// them named 京东签到…) and one more, the task search finds exactly the
// hundred by a Chinese substring, page after page; the runs page names
// the 10,001st task in its rows, and its task filter finds it by typing.
func TestPanelFindsAmongTenThousandTasks(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--log-format", "json", "--no-auth"}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	waitReady(t, p, base+"/readyz", logPath)
	tg := target{name: "ql3-edge", base: base}

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
				name, cmd := fmt.Sprintf("task-%05d", i), fmt.Sprintf("echo %d", i)
				if i%100 == 0 {
					name = fmt.Sprintf("京东签到-%05d", i)
				}
				if err := postTask(client, base, name, cmd); err != nil {
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
	adminCall(t, tg, "POST", "/api/v1/tasks", map[string]any{"name": "第一万零一个任务", "spec": map[string]any{"kind": "qinglong/command@v1", "shell": map[string]any{"command": "echo last"}}}, 201)
	adminCall(t, tg, "POST", "/api/v1/tasks/第一万零一个任务/runs", map[string]any{"idempotencyKey": "last-1"}, 201)
	var last struct {
		ID string `json:"id"`
	}
	apiGet(t, tg, "/api/v1/tasks/第一万零一个任务", &last)

	ctx := tab(t)
	do(t, ctx, "search by a Chinese substring",
		chromedp.Navigate(base+"/#/tasks"),
		chromedp.WaitVisible(css("#task-search")),
		chromedp.SendKeys(css("#task-search"), "签到"),
		chromedp.Click(css(`#task-filter button[type="submit"]`)),
		poll(textOf("#task-total")+` === "100 task(s)" && document.querySelectorAll("#tasks tbody tr").length === 50`),
	)
	names := `JSON.stringify(Array.from(document.querySelectorAll("#tasks tbody tr")).map((r) => r.dataset.task))`
	var found []string
	for page := 1; ; page++ {
		var rows []string
		if err := json.Unmarshal([]byte(get(t, ctx, "rows", chromedp.Evaluate[string](names))), &rows); err != nil {
			t.Fatal(err)
		}
		found = append(found, rows...)
		if page == 1 {
			shot(t, ctx, "ql3-edge-search-10000")
		}
		if page == 2 {
			break
		}
		do(t, ctx, "second page",
			chromedp.Click(css("#more-tasks")),
			poll(`location.hash.includes("cursor=") && !document.getElementById("more-tasks") && document.querySelectorAll("#tasks tbody tr").length === 50`),
		)
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

	// The runs page names the task beyond the 10,000th: in the list and
	// under the task filter, which finds it by typing part of its name.
	uuidCell := `Array.from(document.querySelectorAll("#runs td[data-label='Task']")).some((c) => /[0-9a-f]{8}-[0-9a-f]{4}-/.test(c.textContent))`
	do(t, ctx, "runs list",
		hash("#/runs"),
		poll(`document.querySelectorAll("#runs tbody tr").length === 1`),
		poll(textOf(`#runs td[data-label="Task"]`)+` === "第一万零一个任务"`),
	)
	do(t, ctx, "runs filtered by a typed task name",
		chromedp.SendKeys(css("#filter-task"), "一万零一"),
		poll(`document.querySelectorAll("#task-suggestions option").length === 1`),
		chromedp.Click(css(`#run-filter button[type="submit"]`)),
		poll(`location.hash.includes("task=`+last.ID+`")`),
		poll(`document.querySelectorAll("#runs tbody tr").length === 1 && `+textOf(`#runs td[data-label="Task"]`)+` === "第一万零一个任务"`),
		poll(`document.getElementById("filter-task").value === "第一万零一个任务"`),
	)
	if get(t, ctx, "no id in the task column", chromedp.Evaluate[bool](uuidCell)) {
		t.Error("the runs page shows a task id where the name belongs")
	}
	shot(t, ctx, "ql3-edge-runs-of-task-10001")
	do(t, ctx, "the run names it too",
		chromedp.Click(css(`#runs tbody tr a.mono`)),
		poll(textOf("#run-task")+` === "第一万零一个任务"`),
	)
}
