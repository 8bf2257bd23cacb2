//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/cli"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
)

// ql3 runs a CLI command against s and returns exit code, stdout, stderr.
func (s *server) ql3(env map[string]string, args ...string) (int, string, string) {
	s.t.Helper()
	var stdout, stderr bytes.Buffer
	e := cli.Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Version: "test",
		Getenv: func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			switch k {
			case "QL3_ADDR":
				return s.base
			case "QL3_DATA_DIR":
				return s.dataDir
			}
			return ""
		},
	}
	code := cli.Run(context.Background(), args, e)
	return code, stdout.String(), stderr.String()
}

// TestCLIEndToEnd drives the documented first-task flow through the CLI.
func TestCLIEndToEnd(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, filepath.Join(t.TempDir(), "data"), clk)

	code, out, errOut := s.ql3(nil, "task", "add", "--name", "hello", "--cron", "*/5 * * * * *", "--zone", "Europe/London", "--", "echo", "hi")
	if code != 0 || !strings.Contains(out, "created task hello") {
		t.Fatalf("task add: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.ql3(nil, "task", "add", "--name", "home", "--shell", "echo $HOME", "--concurrency", "allow", "--max-attempts", "3", "--backoff", "1s", "--env", "A=1")
	if code != 0 {
		t.Fatalf("task add --shell: %d %q %q", code, out, errOut)
	}
	var home httpapi.Task
	code, out, _ = s.ql3(nil, "task", "show", "home", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &home) != nil {
		t.Fatalf("task show --json: %d %q", code, out)
	}
	if home.Spec.Shell == nil || home.Spec.Shell.Command != "echo $HOME" || home.Spec.Retry.MaxAttempts != 3 ||
		home.Spec.Retry.BackoffBaseMs != 1000 || home.Spec.Environment["A"] != "1" || home.Spec.Concurrency != "allow" {
		t.Errorf("home spec %+v", home.Spec)
	}

	// The schedule runs hello every 5 seconds.
	var hello httpapi.Task
	s.api("GET", "/api/v1/tasks/hello", nil, 200, &hello)
	s.waitScheduled(hello)
	s.step(5 * time.Second)
	runs := s.runs(hello.ID)
	if len(runs) != 1 {
		t.Fatalf("%d runs after 5 s", len(runs))
	}
	s.waitRun(runs[0].ID, "to succeed", status("succeeded"))
	code, out, _ = s.ql3(nil, "logs", runs[0].ID)
	if code != 0 || out != "hi\n" {
		t.Errorf("logs: %d %q", code, out)
	}
	code, out, _ = s.ql3(nil, "logs", runs[0].ID, "-f")
	if code != 0 || out != "hi\n" {
		t.Errorf("logs -f: %d %q", code, out)
	}
	code, out, _ = s.ql3(nil, "run", "list", "--task", "hello")
	if code != 0 || !strings.Contains(out, runs[0].ID) || !strings.Contains(out, "succeeded") || !strings.Contains(out, " hello ") {
		t.Errorf("run list (rows name their task): %d %q", code, out)
	}
	code, out, _ = s.ql3(nil, "task", "list", "--search", "HOME")
	if code != 0 || !strings.Contains(out, "home") || strings.Contains(out, "hello") {
		t.Errorf("task list --search: %d %q", code, out)
	}
	code, out, _ = s.ql3(nil, "run", "show", runs[0].ID)
	if code != 0 || !strings.Contains(out, "run.succeeded") {
		t.Errorf("run show: %d %q", code, out)
	}

	// run now --wait with an idempotency key; the same key returns the same run.
	code, out, _ = s.ql3(nil, "run", "now", "home", "--key", "k1", "--wait")
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Errorf("run now --wait: %d %q", code, out)
	}
	code, out, _ = s.ql3(nil, "run", "now", "home", "--key", "k1")
	if code != 0 || !strings.Contains(out, "already requested with this idempotency key") {
		t.Errorf("repeated key: %d %q", code, out)
	}

	// Edit publishes a new revision and replaces the trigger.
	code, out, _ = s.ql3(nil, "task", "edit", "hello", "--cron", "0 * * * *", "--", "echo", "bye")
	if code != 0 || !strings.Contains(out, "revision 2 published") {
		t.Errorf("task edit: %d %q", code, out)
	}
	s.api("GET", "/api/v1/tasks/hello", nil, 200, &hello)
	if hello.Revision != 2 || hello.Spec.Argv.Args[0] != "bye" || len(hello.Triggers) != 1 || hello.Triggers[0].Expression != "0 * * * *" {
		t.Errorf("after edit: %+v", hello)
	}
	for _, args := range [][]string{{"task", "disable", "hello"}, {"task", "enable", "hello"}, {"task", "rm", "hello"}} {
		if code, out, errOut := s.ql3(nil, args...); code != 0 {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}

	// Documented exit codes.
	for _, tc := range []struct {
		env  map[string]string
		args []string
		code int
	}{
		{nil, []string{"task", "show", "hello"}, cli.ExitNotFound},
		{nil, []string{"task", "add", "--name", "home", "--", "true"}, cli.ExitConflict},
		{nil, []string{"task", "add", "--name", "x", "--cron", "* * *", "--", "true"}, cli.ExitError},
		{nil, []string{"task", "add", "--cron", "* * * * *", "--", "true"}, cli.ExitUsage},
		{nil, []string{"task", "frobnicate"}, cli.ExitUsage},
		{nil, []string{"run", "cancel", "no-such-run"}, cli.ExitNotFound},
		{map[string]string{"QL3_DATA_DIR": t.TempDir()}, []string{"task", "rm", "home"}, cli.ExitUnauthorized},
		{map[string]string{"QL3_ADDR": "127.0.0.1:1"}, []string{"task", "list"}, cli.ExitUnavailable},
		{nil, []string{"run", "now", "home", "--wait", "--key", "k1"}, cli.ExitOK},
		{nil, []string{"--help"}, cli.ExitOK},
		{nil, []string{"task", "add", "--help"}, cli.ExitOK},
	} {
		if code, out, errOut := s.ql3(tc.env, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d (%q %q)", tc.args, code, tc.code, out, errOut)
		}
	}
}

// TestBadInputEndToEnd: each kind of bad input gets a 4xx naming the field
// and leaves nothing behind.
func TestBadInputEndToEnd(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, t.TempDir(), clk)
	spec := `{"kind":"qinglong/command@v1","argv":{"file":"true"}}`
	for _, tc := range []struct {
		name, body string
		status     int
		field      string
	}{
		{"invalid cron", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"*/0 * * * *"}]}`, 400, "triggers[0].expression"},
		{"unknown zone", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *","timeZone":"Europe/Lisbonn"}]}`, 400, "triggers[0].timeZone"},
		{"oversized body", `{"name":"a","spec":` + spec + `,"x":"` + strings.Repeat("y", 70_000) + `"}`, 413, ""},
		{"unknown field", `{"name":"a","spec":` + spec + `,"schedule":"* * * * *"}`, 400, "schedule"},
		{"bad JSON", `{"name":"a","spec":` + spec, 400, ""},
		{"bad spec", `{"name":"a","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"},"timeoutMs":-5}}`, 400, "spec.timeoutMs"},
	} {
		status, body := s.raw("POST", "/api/v1/tasks", tc.body)
		var e httpapi.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || status != tc.status || e.Field != tc.field || e.Message == "" {
			t.Errorf("%s: %d %s (want %d field %q)", tc.name, status, body, tc.status, tc.field)
		}
	}
	var l httpapi.List[httpapi.Task]
	s.api("GET", "/api/v1/tasks?deleted=1", nil, 200, &l)
	if len(l.Items) != 0 {
		t.Errorf("rejected creates left %d tasks", len(l.Items))
	}
}

// TestCLIRunNowSkipped (#27): `run now` on a forbid task with a run active
// prints one word and the reason and exits 8, with or without --json, and
// a repeated idempotency key answers the same; the active run keeps going.
func TestCLIRunNowSkipped(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, t.TempDir(), clk)
	s.createTask("single", shellSpec("sleep 30", `,"concurrency":"forbid"`))
	code, out, errOut := s.ql3(nil, "run", "now", "single")
	if code != 0 || !strings.HasSuffix(out, ": queued\n") {
		t.Fatalf("first run now: %d %q %q", code, out, errOut)
	}
	first := strings.TrimSuffix(strings.TrimPrefix(out, "run "), ": queued\n")
	s.waitRun(first, "to be running", attemptRunning)

	code, out, errOut = s.ql3(nil, "run", "now", "single", "--key", "k1")
	if code != cli.ExitRunSkipped || !strings.Contains(out, ": skipped (concurrency_forbid") || strings.Contains(out, "cancelled") || errOut != "" {
		t.Fatalf("run now while busy: exit %d (want %d) stdout %q stderr %q", code, cli.ExitRunSkipped, out, errOut)
	}
	code, out, _ = s.ql3(nil, "run", "now", "single", "--key", "k1", "--json")
	var again httpapi.Run
	if code != cli.ExitRunSkipped || json.Unmarshal([]byte(out), &again) != nil || again.Reason != "concurrency_forbid" {
		t.Fatalf("run now --json again: exit %d %q", code, out)
	}
	code, out, _ = s.ql3(nil, "run", "now", "single", "--wait")
	if code != cli.ExitRunSkipped || !strings.Contains(out, "skipped") {
		t.Fatalf("run now --wait while busy: exit %d %q", code, out)
	}
	if r := s.run(first); !attemptRunning(r) {
		t.Errorf("the first run stopped: %+v", r)
	}
	if code, _, help := s.ql3(nil, "run", "now", "--help"); code != 0 || !strings.Contains(help, "exits 8") {
		t.Errorf("run now --help does not document exit 8:\n%s", help)
	}
	s.api("POST", "/api/v1/runs/"+first+"/cancel", nil, 202, nil)
	s.waitRun(first, "to be cancelled", status("cancelled"))
}
