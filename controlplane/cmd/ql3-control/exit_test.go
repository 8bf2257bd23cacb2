package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestExitStatusAndHelp (#27) runs the real binary: help asked for exits 0
// (global, per group, per command, with flag descriptions and defaults), a
// group without a command exits 2, and run now that the task's concurrency
// policy skipped prints one word and the reason and exits 8.
func TestExitStatusAndHelp(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ql3-control")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/tasks/t1/runs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"r1","taskId":"t1","status":"cancelled","attemptCount":0,"maxAttempts":1,"created":true}`)
	}))
	defer srv.Close()
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "QL3_SERVER=" + srv.URL,
			"QL3_TOKEN=ql3c_0123456789abcdef_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	cases := []struct {
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{[]string{"--help"}, 0, []string{"pki init", "run now", "exit status"}, nil},
		{[]string{"pki", "--help"}, 0, []string{"pki issue-worker"}, nil},
		{[]string{"worker", "list", "--help"}, 0, []string{"--json", "--server string", `default "http://127.0.0.1:5800"`}, nil},
		{[]string{"pki"}, 2, nil, []string{"pki init", "needs a subcommand"}},
		{[]string{"run", "now", "--task", "t1"}, 8, []string{"run r1: skipped (concurrency_forbid"}, nil},
		{[]string{"run", "now", "--task", "t1", "--json"}, 8, []string{`"status": "cancelled"`}, nil},
		{[]string{"run", "now", "--task", "nope"}, 1, nil, []string{"ql3-control:"}},
	}
	for _, c := range cases {
		code, out, errOut := run(c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\nstdout %s\nstderr %s", c.args, code, c.code, out, errOut)
			continue
		}
		for _, w := range c.stdout {
			if !strings.Contains(out, w) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, w := range c.stderr {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
}
