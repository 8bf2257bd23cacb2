//go:build linux

// Package integration drives ql3-edge end to end: app.Main in-process with a
// fake clock where timing matters, and the real binary where a process must
// die (kill -9). Nothing here asserts on wall-clock durations; waits are
// bounded polls that only decide how long to keep looking.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/app"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
)

// t0 is a fixed start on a whole second.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// waitLimit bounds every poll; reaching it fails the test (it never
// passes one).
const waitLimit = 20 * time.Second

// server is one in-process ql3-edge.
type server struct {
	t       *testing.T
	m       *app.Main
	clock   *clock.Fake
	dataDir string
	token   string
	base    string
	stdout  bytes.Buffer

	// sleepUntil is the wake time the scheduler last went to sleep with
	// (unix ms); it moves past now only after a round at now.
	sleepUntil atomic.Int64
	closed     bool
}

// startServer starts app.Main on dataDir with clk, listening on a free
// loopback port.
func startServer(t *testing.T, dataDir string, clk *clock.Fake) *server {
	t.Helper()
	s := &server{t: t, clock: clk, dataDir: dataDir}
	m := app.NewMain()
	m.Config.DataDir = dataDir
	m.Config.Listen = "127.0.0.1:0"
	m.Config.KillGraceMs = 2000
	m.Clock = clk
	m.Version = "test"
	m.Stdout = &s.stdout
	m.Stderr = io.Discard
	m.Getenv = func(string) string { return "" }
	m.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m.Hooks.SchedulerSleep = func(until time.Time) { s.sleepUntil.Store(until.UnixMilli()) }
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("starting ql3-edge: %v", err)
	}
	s.m = m
	s.base = "http://" + m.Addr()
	tok, err := app.ReadTokenFile(dataDir + "/" + app.TokenFileName)
	if err != nil {
		t.Fatal(err)
	}
	s.token = tok
	t.Cleanup(s.close)
	return s
}

func (s *server) close() {
	if s.closed {
		return
	}
	s.closed = true
	if err := s.m.Close(); err != nil {
		s.t.Errorf("closing ql3-edge: %v", err)
	}
}

// testWriter sends server logs to the test log (shown on failure).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// api calls the server with the admin token and decodes a response with
// the wanted status into out.
func (s *server) api(method, path string, body any, want int, out any) {
	s.t.Helper()
	status, data := s.raw(method, path, body)
	if status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

func (s *server) raw(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// runs lists every run of a task (all pages), newest first.
func (s *server) runs(taskID string) []httpapi.Run {
	s.t.Helper()
	var all []httpapi.Run
	cursor := ""
	for {
		var page httpapi.List[httpapi.Run]
		s.api("GET", "/api/v1/runs?limit=200&task="+taskID+"&cursor="+cursor, nil, 200, &page)
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

func (s *server) run(id string) httpapi.Run {
	s.t.Helper()
	var r httpapi.Run
	s.api("GET", "/api/v1/runs/"+id, nil, 200, &r)
	return r
}

// settle waits until the scheduler has finished a round at the current
// fake time and gone back to sleep: its wake time then lies after now.
func (s *server) settle() {
	s.t.Helper()
	now := s.clock.Now().UnixMilli()
	eventually(s.t, "the scheduler to finish its round", func() bool { return s.sleepUntil.Load() > now })
}

// waitScheduled waits until the scheduler initialised the cursors of all
// of the task's triggers (a trigger's first fire is decided when the
// scheduler first sees it, never retroactively).
func (s *server) waitScheduled(task httpapi.Task) {
	s.t.Helper()
	eventually(s.t, "the triggers of "+task.Name+" to be scheduled", func() bool {
		var l httpapi.List[httpapi.Trigger]
		s.api("GET", "/api/v1/tasks/"+task.ID+"/triggers", nil, 200, &l)
		for _, tr := range l.Items {
			if tr.NextFireAtMs == 0 {
				return false
			}
		}
		return true
	})
	s.settle()
}

// step advances the fake clock by d and waits for the scheduler round.
func (s *server) step(d time.Duration) {
	s.t.Helper()
	s.clock.Advance(d)
	s.settle()
}

// eventually polls cond until it holds or waitLimit passes (a failure).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitRun polls a run until cond holds.
func (s *server) waitRun(id, what string, cond func(httpapi.Run) bool) httpapi.Run {
	s.t.Helper()
	var r httpapi.Run
	eventually(s.t, "run "+id+" "+what, func() bool {
		r = s.run(id)
		return cond(r)
	})
	return r
}

func status(want ...string) func(httpapi.Run) bool {
	return func(r httpapi.Run) bool {
		for _, w := range want {
			if r.Status == w {
				return true
			}
		}
		return false
	}
}

// attemptRunning holds when the run's newest attempt has a live process.
func attemptRunning(r httpapi.Run) bool {
	n := len(r.Attempts)
	return r.Status == "running" && n > 0 && r.Attempts[n-1].Status == "running" && r.Attempts[n-1].PID > 0
}

// createTask posts a task (spec and triggers as JSON) and returns it.
func (s *server) createTask(name, specJSON string, triggers ...httpapi.TriggerRequest) httpapi.Task {
	s.t.Helper()
	req := httpapi.CreateTaskRequest{Name: name, Spec: json.RawMessage(specJSON), Triggers: triggers}
	var task httpapi.Task
	s.api("POST", "/api/v1/tasks", req, 201, &task)
	return task
}

// processGone reports whether pid no longer runs (absent or a zombie that
// its new parent has not reaped yet).
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// readPID waits for a pid file a task wrote.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, "pid file "+path, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		_, err = fmt.Sscanf(strings.TrimSpace(string(data)), "%d", &pid)
		return err == nil && pid > 0
	})
	return pid
}
