//go:build linux

package app

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/scripts/testio"
)

// edgeCall makes one API request; tok "" sends no Authorization header.
func edgeCall(t *testing.T, method, url, tok, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestMetricsAfterRunsAndJSONLogs runs a few Runs on a real ql3-edge with
// --log-format json at debug, then scrapes /metrics and reads the log:
// the run and HTTP series carry the expected values, every log line is
// JSON, each request and Run transition has its line, and the admin token
// (sent in Authorization headers, right and wrong) appears in none.
func TestMetricsAfterRunsAndJSONLogs(t *testing.T) {
	var logBuf testio.Buffer
	m, _, err := startTestMain(t, filepath.Join(t.TempDir(), "data"), func(m *Main) {
		m.Config.LogFormat = "json"
		m.Config.LogLevel = "debug"
		m.Stderr = &logBuf
	})
	if err != nil {
		t.Fatal(err)
	}
	tok := m.NewAdminToken()
	base := "http://" + m.Addr()
	const wrongTok = "ql3c_00000000000000aa_0000000000000000000000000000000000000000000000000000000000000bad"

	code, body := edgeCall(t, "POST", base+"/api/v1/tasks", tok, `{"name":"ok","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"},"concurrency":"allow"}}`)
	if code != 201 {
		t.Fatalf("create ok: %d %s", code, body)
	}
	code, body = edgeCall(t, "POST", base+"/api/v1/tasks", tok, `{"name":"bad","spec":{"kind":"qinglong/command@v1","argv":{"file":"false"}}}`)
	if code != 201 {
		t.Fatalf("create bad: %d %s", code, body)
	}
	var runIDs []string
	for _, task := range []string{"ok", "ok", "bad"} {
		code, body = edgeCall(t, "POST", base+"/api/v1/tasks/"+task+"/runs", tok, "")
		if code != 201 {
			t.Fatalf("run %s: %d %s", task, code, body)
		}
		var r struct{ ID string }
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		runIDs = append(runIDs, r.ID)
	}
	// Bounded wait for the three Runs to finish (processes run on the real
	// clock; the check is on their recorded status, not on time).
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range runIDs {
		for {
			_, body = edgeCall(t, "GET", base+"/api/v1/runs/"+id, tok, "")
			var r struct{ Status string }
			_ = json.Unmarshal(body, &r)
			if r.Status == "succeeded" || r.Status == "failed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s still %q", id, r.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if code, _ := edgeCall(t, "GET", base+"/metrics", wrongTok, ""); code != 401 {
		t.Errorf("/metrics with a wrong token: %d, want 401", code)
	}
	code, body = edgeCall(t, "GET", base+"/metrics", "", "") // loopback: no token needed
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	scrape := string(body)
	for _, want := range []string{
		`ql3_runs{status="succeeded"} 2`,
		`ql3_runs{status="failed"} 1`,
		`ql3_runs{status="queued"} 0`,
		`ql3_run_queue_depth 0`,
		`ql3_run_queue_oldest_age_seconds 0`,
		`ql3_runner_attempts_running 0`,
		`ql3_scheduler_admitted_total 0`,
		`ql3_scheduler_fire_lag_seconds_count 0`,
		`ql3_http_requests_total{route="/api/v1/tasks/{task}/runs",method="POST",code="201"} 3`,
		`ql3_http_requests_total{route="/api/v1/tasks",method="POST",code="201"} 2`,
		`ql3_http_requests_total{route="unmatched",method="GET",code="401"} 1`,
		`ql3_http_request_duration_seconds_count{route="/api/v1/tasks/{task}/runs"} 3`,
		`ql3_http_request_duration_seconds_bucket{route="/api/v1/tasks",le="+Inf"} 2`,
		"# TYPE ql3_http_request_duration_seconds histogram",
	} {
		if !strings.Contains(scrape, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, scrape)
		}
	}

	_ = m.Close()
	logs := logBuf.String()
	if strings.Contains(logs, tok) || strings.Contains(logs, wrongTok) || strings.Contains(logs, tok[len(tok)-64:]) {
		t.Fatal("a token appears in the log")
	}
	var requests, queued, finished int
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not a JSON log line: %q", sc.Text())
		}
		switch line["msg"] {
		case "http request":
			requests++
			if line["level"] != "DEBUG" {
				t.Errorf("request line at %v", line["level"])
			}
		case "run queued":
			queued++
		case "attempt finished":
			finished++
			if line["level"] != "INFO" {
				t.Errorf("transition line at %v", line["level"])
			}
		}
	}
	if requests < 8 || queued != 3 || finished != 3 {
		t.Errorf("log lines: %d requests, %d queued, %d finished; want >= 8, 3, 3:\n%s", requests, queued, finished, logs)
	}
}
