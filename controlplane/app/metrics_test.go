package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/app"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/scripts/testio"
)

// scrapeMetrics GETs base/metrics, with a bearer token when tok is set.
func scrapeMetrics(t *testing.T, base, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsScrapeAndTextLogs serves ql3-control with --log-format text at
// debug, makes three Runs (two stay queued, one is cancelled), then scrapes
// /metrics from loopback without a token and with a wrong token, and reads
// the log: series and values as expected, one line per request, the Run
// transitions at info, and no token in any line.
func TestMetricsScrapeAndTextLogs(t *testing.T) {
	t.Parallel()
	db := pgtest.Shared(t).NewEmptyDB(t)
	env := map[string]string{"QL3_DSN": db.DSN("")}
	if _, err := runCmd(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, env, "token", "create", "--name", "metrics")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(out)
	for _, role := range []string{postgres.RoleAdmin, postgres.RoleRuntime} {
		if err := postgres.EnableLogin(context.Background(), db.Conn(t), role, ""); err != nil {
			t.Fatal(err)
		}
	}
	var logs testio.Buffer
	srv := &app.Main{Stdout: io.Discard, Stderr: &logs, Getenv: func(string) string { return "" }, Version: "test"}
	app.NoMetricsSettle(srv)
	if err := srv.ParseFlags([]string{"serve", "--admin-dsn", db.DSN(postgres.RoleAdmin),
		"--runtime-dsn", db.DSN(postgres.RoleRuntime), "--listen", "127.0.0.1:0",
		"--log-format", "text", "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + srv.Addr()
	c := httpClient{t: t, base: base, token: token}

	scrape := func(tok string) (int, string) { return scrapeMetrics(t, base, tok) }
	if code, body := scrape(""); code != 200 { // starts the finished-Run counter
		t.Fatalf("first scrape: %d %s", code, body)
	}
	if code := c.do("POST", "/api/v1/projects", `{"name":"ops"}`, nil); code != 201 {
		t.Fatalf("project: %d", code)
	}
	var task struct{ ID string }
	if code := c.do("POST", "/api/v1/tasks", `{"project":"ops","name":"t","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"},"concurrency":"allow"}}`, &task); code != 201 {
		t.Fatalf("task: %d", code)
	}
	var runs []string
	for i := range 3 {
		var r struct{ ID string }
		if code := c.do("POST", "/api/v1/tasks/"+task.ID+"/runs", fmt.Sprintf(`{"idempotencyKey":"k%d"}`, i), &r); code != 201 {
			t.Fatalf("run now: %d", code)
		}
		runs = append(runs, r.ID)
	}
	if code := c.do("POST", "/api/v1/runs/"+runs[0]+"/cancel", "", nil); code != 202 && code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	wrong := token[:len(token)-2] + "00"
	if code, _ := scrape(wrong); code != 401 {
		t.Errorf("scrape with a wrong token: %d, want 401", code)
	}
	code, body := scrape(token)
	if code != 200 {
		t.Fatalf("scrape: %d %s", code, body)
	}
	for _, want := range []string{
		`ql3_runs{status="queued"} 2`,
		`ql3_run_queue_depth 2`,
		`ql3_runs_finished_total{status="cancelled"} 1`,
		`ql3_runs_finished_total{status="failed"} 0`,
		`ql3_worker_sessions{status="online"} 0`,
		`ql3_run_leases 0`,
		`ql3_scheduler_admitted_total 0`,
		`ql3_scheduler_admissions_refused_total{reason="raced"} 0`,
		`ql3_scheduler_serialization_retries_total 0`,
		`ql3_scheduler_fire_lag_seconds_count 0`,
		`ql3_http_requests_total{route="/api/v1/tasks/{task}/runs",method="POST",code="201"} 3`,
		`ql3_http_requests_total{route="/metrics",method="GET",code="200"} 1`,
		`ql3_http_requests_total{route="unmatched",method="GET",code="401"} 1`,
		`ql3_http_request_duration_seconds_count{route="/api/v1/tasks/{task}/runs"} 3`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body, "ql3_run_queue_oldest_age_seconds ") || strings.Contains(body, "ql3_run_queue_oldest_age_seconds 0\n") {
		t.Errorf("oldest queued age missing or zero with two queued Runs:\n%s", body)
	}
	// The queue per project and priority and the overload verdict (ADR
	// 0066): two queued Runs of one project at priority 0, not overloaded;
	// /readyz carries the same verdict and stays ready.
	for _, want := range []string{`,priority="0"} 2`, "ql3_run_queue_overloaded 0\n", "ql3_run_queue_overload_threshold_seconds 30\n",
		"ql3_run_queue_groups_truncated 0\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body, `ql3_run_queue_group_depth{project="`) || !strings.Contains(body, `ql3_run_queue_group_oldest_age_seconds{project="`) {
		t.Errorf("/metrics lacks the per-project queue series:\n%s", body)
	}
	var ready struct {
		Status string
		Queue  *struct {
			Overloaded        bool
			Depth             int64
			OldestQueuedAgeMs int64
		}
	}
	if code := c.do("GET", "/readyz", "", &ready); code != 200 || ready.Status != "ok" || ready.Queue == nil ||
		ready.Queue.Overloaded || ready.Queue.Depth != 2 || ready.Queue.OldestQueuedAgeMs < 0 {
		t.Errorf("/readyz = %d %+v, want ok with a queue of 2, not overloaded", code, ready)
	}
	_ = srv.Close()

	text := logs.String()
	if strings.Contains(text, token) || strings.Contains(text, wrong) || strings.Contains(text, token[len(token)-40:]) {
		t.Fatal("a token appears in the log")
	}
	var requests, created, cancels int
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if json.Valid([]byte(line)) || !strings.HasPrefix(line, "time=") {
			t.Fatalf("not a text log line: %q", line)
		}
		switch {
		case strings.Contains(line, `msg="http request"`):
			requests++
			if !strings.Contains(line, "level=DEBUG") {
				t.Errorf("request line not at debug: %q", line)
			}
		case strings.Contains(line, `msg="run created"`) && strings.Contains(line, "level=INFO"):
			created++
		case strings.Contains(line, `msg="run cancel requested"`) && strings.Contains(line, "level=INFO"):
			cancels++
		}
	}
	if requests < 9 || created != 3 || cancels != 1 {
		t.Errorf("log: %d request lines, %d run created, %d cancel; want >= 9, 3, 1:\n%s", requests, created, cancels, text)
	}
}
