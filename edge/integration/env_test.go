//go:build linux

package integration

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ql3/ql3/edge/app"
	"github.com/ql3/ql3/edge/cli"
	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
)

// syncBuffer collects the server's own log (every level) for the grep.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnvMain is an app.Main on dataDir logging everything (debug: one line
// per request too) into logs.
func newEnvMain(dataDir string, clk *clock.Fake, logs io.Writer) *app.Main {
	m := app.NewMain()
	m.Config.DataDir = dataDir
	m.Config.Listen = "127.0.0.1:0"
	m.Clock = clk
	m.Version = "test"
	m.Stdout = logs
	m.Stderr = logs
	m.Getenv = func(string) string { return "" }
	m.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return m
}

// cliIn runs a CLI command with stdin against base/dataDir.
func cliIn(base, dataDir, stdin string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Version: "test",
		Getenv: func(k string) string {
			return map[string]string{"QL3_ADDR": base, "QL3_DATA_DIR": dataDir}[k]
		},
	})
	return code, stdout.String(), stderr.String()
}

// TestEnvStoreEndToEnd: entries added through the CLI (values on stdin)
// reach a task's process joined in QingLong order; its log shows *** and
// the attempt counts them; afterwards no secret is found in the database
// file and its WAL, in any file of the data directory, in the server's
// log, or in any API answer but reveal. A wrong or missing key file stops
// the next start with an error naming it.
func TestEnvStoreEndToEnd(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	outDir := t.TempDir()
	var logs syncBuffer
	m := newEnvMain(dataDir, clock.NewFake(t0), &logs)
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	base := "http://" + m.Addr()
	tok, err := app.ReadTokenFile(filepath.Join(dataDir, app.TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, base: base, token: tok, dataDir: dataDir}

	secrets := []string{"pt_key=ALPHA-first-account-0001", "pt_key=BRAVO-second-account-0002", "tg-CHARLIE-token-0003"}
	for i, add := range [][]string{{"--name", "JD_COOKIE", "--remarks", "account 1"}, {"--name", "JD_COOKIE"}, {"--name", "TG_TOKEN", "--pinned"}} {
		if code, out, errOut := cliIn(base, dataDir, secrets[i]+"\n", append([]string{"env", "add"}, add...)...); code != 0 || strings.Contains(out, secrets[i]) {
			t.Fatalf("env add: %d %q %q", code, out, errOut)
		}
	}
	if code, _, errOut := cliIn(base, dataDir, "pt_key=DISABLED-0004", "env", "add", "--name", "JD_COOKIE", "--disabled"); code != 0 {
		t.Fatalf("env add --disabled: %q", errOut)
	}
	code, out, _ := cliIn(base, dataDir, "", "env", "list")
	if code != 0 || !strings.Contains(out, "JD_COOKIE") || strings.Contains(out, "ALPHA") {
		t.Fatalf("env list: %d %q", code, out)
	}

	script := `printf '%s' "$JD_COOKIE" > ` + filepath.Join(outDir, "jd") +
		`; printf '%s' "${TG_TOKEN-unset}" > ` + filepath.Join(outDir, "tg") +
		`; echo "cookie: $JD_COOKIE"; printf 'token: tg-CHAR'; printf 'LIE-token-0003\n'` +
		`; head -c 524288 /dev/zero | tr '\0' x; printf '%s' "$TG_TOKEN"; head -c 524288 /dev/zero | tr '\0' y; echo`
	var task httpapi.Task
	s.api("POST", "/api/v1/tasks", map[string]any{"name": "cookies", "spec": map[string]any{
		"kind": "qinglong/command@v1", "shell": map[string]any{"command": script}}}, 201, &task)
	var only httpapi.Task
	s.api("POST", "/api/v1/tasks", map[string]any{"name": "only-jd", "spec": map[string]any{
		"kind": "qinglong/command@v1", "env": map[string]any{"use": []string{"JD_COOKIE"}},
		"shell": map[string]any{"command": `printf '%s' "${TG_TOKEN-unset}" > ` + filepath.Join(outDir, "only")}}}, 201, &only)
	var r1, r2 httpapi.Run
	s.api("POST", "/api/v1/tasks/cookies/runs", nil, 201, &r1)
	s.api("POST", "/api/v1/tasks/only-jd/runs", nil, 201, &r2)
	done := func(r httpapi.Run) bool { return r.Status == "succeeded" || r.Status == "failed" }
	r1 = s.waitRun(r1.ID, "finished", done)
	r2 = s.waitRun(r2.ID, "finished", done)
	if r1.Status != "succeeded" || r2.Status != "succeeded" {
		t.Fatalf("runs: %s %s", r1.Status, r2.Status)
	}
	for file, want := range map[string]string{"jd": secrets[0] + "&" + secrets[1], "tg": secrets[2], "only": "unset"} {
		if got, _ := os.ReadFile(filepath.Join(outDir, file)); string(got) != want {
			t.Errorf("process saw %s = %q, want %q", file, got, want)
		}
	}
	if a := r1.Attempts[0]; a.MaskedCount != 3 {
		t.Errorf("masked count %d, want 3 (the joined cookie, the split token, the token in a 1 MiB line)", a.MaskedCount)
	}
	// The stored log in two ranges (a read returns at most 1 MiB), the
	// followed one in one stream.
	status, stored := s.raw("GET", "/api/v1/runs/"+r1.ID+"/attempts/1/log", nil)
	_, rest := s.raw("GET", "/api/v1/runs/"+r1.ID+"/attempts/1/log?offset="+strconv.Itoa(len(stored)), nil)
	stored = append(stored, rest...)
	_, followed := s.raw("GET", "/api/v1/runs/"+r1.ID+"/attempts/1/log?follow=1", nil)
	bigLine := strings.Repeat("x", 524288) + "***" + strings.Repeat("y", 524288) + "\n"
	for _, log := range [][]byte{stored, followed} {
		if status != 200 || string(log) != "cookie: ***\ntoken: ***\n"+bigLine {
			t.Errorf("log: %d, %d bytes, starts %q", status, len(log), log[:min(len(log), 40)])
		}
	}

	// Every API answer but reveal: collect them for the grep.
	var answers bytes.Buffer
	for _, p := range []string{"/api/v1/envs", "/api/v1/envs?q=jd", "/api/v1/tasks", "/api/v1/tasks/cookies", "/api/v1/runs",
		"/api/v1/runs/" + r1.ID, "/api/v1/runs/" + r1.ID + "/events", "/api/v1/runs/" + r1.ID + "/attempts/1/log", "/api/v1/audit", "/metrics"} {
		_, body := s.raw("GET", p, nil)
		answers.Write(body)
	}
	_, body := s.raw("POST", "/api/v1/envs/export", `{"format":"json"}`)
	answers.Write(body)
	code, out, _ = cliIn(base, dataDir, "", "env", "list", "--json")
	answers.WriteString(out)
	// reveal works, and is the one place a value appears.
	var list httpapi.EnvList
	s.api("GET", "/api/v1/envs?q=TG_TOKEN", nil, 200, &list)
	if code, out, _ := cliIn(base, dataDir, "", "env", "reveal", list.Items[0].ID); code != 0 || strings.TrimSpace(out) != secrets[2] {
		t.Fatalf("env reveal: %d %q", code, out)
	}
	// The data directory while the server runs (the WAL is there) and
	// after it stopped (checkpointed into the database file).
	allSecrets := append(secrets, "DISABLED-0004")
	running := grepDir(t, dataDir, allSecrets)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	stopped := grepDir(t, dataDir, allSecrets)
	if !running.wal || running.files < 4 || stopped.files < 4 {
		t.Fatalf("the grep saw %d files (WAL: %v) running, %d stopped", running.files, running.wal, stopped.files)
	}
	for _, sec := range allSecrets {
		if strings.Contains(logs.String(), sec) {
			t.Errorf("the server log holds a secret")
		}
		if strings.Contains(answers.String(), sec) {
			t.Errorf("an API answer holds a secret")
		}
	}
	if !strings.Contains(logs.String(), "env value revealed") {
		t.Fatal("no reveal line in the server log")
	}
	t.Logf("grepped %d files running (with the WAL), %d stopped, %d bytes of server log, %d bytes of API answers",
		running.files, stopped.files, len(logs.String()), answers.Len())

	// A wrong key file, then a missing one: the start stops naming it.
	keyPath := filepath.Join(dataDir, envcrypt.DefaultKeyFileName)
	if err := os.Rename(keyPath, keyPath+".saved"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func()
	}{
		{"missing", func() {}},
		{"wrong", func() {
			if _, err := envcrypt.CreateKeyFile(keyPath); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		tc.setup()
		m2 := newEnvMain(dataDir, clock.NewFake(t0), io.Discard)
		err := m2.Run(context.Background())
		_ = m2.Close()
		if err == nil || !strings.Contains(err.Error(), keyPath) {
			t.Fatalf("%s key file: start error %v, want one naming %s", tc.name, err, keyPath)
		}
	}
	if err := os.Rename(keyPath+".saved", keyPath); err != nil {
		t.Fatal(err)
	}
	m3 := newEnvMain(dataDir, clock.NewFake(t0), io.Discard)
	if err := m3.Run(context.Background()); err != nil {
		t.Fatalf("restart with the right key: %v", err)
	}
	_ = m3.Close()
}

type grepResult struct {
	files int
	wal   bool
}

// grepDir reads every regular file under dir and fails on any secret.
func grepDir(t *testing.T, dir string, secrets []string) grepResult {
	t.Helper()
	var res grepResult
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("reading %s: %v", p, err)
			return nil
		}
		res.files++
		res.wal = res.wal || (strings.HasSuffix(p, "-wal") && len(data) > 0)
		for _, sec := range secrets {
			if bytes.Contains(data, []byte(sec)) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})
	return res
}

// TestEnvCLIImportExport: lines in, lines out (values audited), a refused
// import stores nothing, a rotation keeps the values readable.
func TestEnvCLIImportExport(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"), clock.NewFake(t0))
	lines := "# two accounts\nexport JD_COOKIE=\"pt_key=one\"\nJD_COOKIE=pt_key=two\nTG_TOKEN='tok-3'\n"
	if code, out, errOut := cliIn(s.base, s.dataDir, lines, "env", "import"); code != 0 || !strings.Contains(out, "imported 3") {
		t.Fatalf("env import: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cliIn(s.base, s.dataDir, "A=1\nQL3_B=2\n", "env", "import"); code != 1 || !strings.Contains(errOut, "lines[2].name") {
		t.Fatalf("a bad line: %d %q", code, errOut)
	}
	code, out, _ := cliIn(s.base, s.dataDir, "", "env", "export", "--values", "--format", "lines")
	if code != 0 || out != "JD_COOKIE=pt_key=one\nJD_COOKIE=pt_key=two\nTG_TOKEN=tok-3\n" {
		t.Fatalf("env export: %d %q", code, out)
	}
	code, out, _ = cliIn(s.base, s.dataDir, "", "env", "export")
	if code != 0 || strings.Contains(out, "pt_key") || !strings.Contains(out, "TG_TOKEN") {
		t.Fatalf("env export without values: %d %q", code, out)
	}
	if code, out, errOut := cliIn(s.base, s.dataDir, "", "env", "rotate-key"); code != 0 || !strings.Contains(out, "rotated") {
		t.Fatalf("rotate-key: %d %q %q", code, out, errOut)
	}
	var list httpapi.EnvList
	s.api("GET", "/api/v1/envs?q=TG", nil, 200, &list)
	if code, out, _ := cliIn(s.base, s.dataDir, "new-token\n", "env", "edit", list.Items[0].ID, "--value-file", "-"); code != 0 {
		t.Fatalf("env edit: %d %q", code, out)
	}
	if code, out, _ := cliIn(s.base, s.dataDir, "", "env", "reveal", list.Items[0].ID); code != 0 || out != "new-token\n" {
		t.Fatalf("reveal after rotation and edit: %d %q", code, out)
	}
	var audit httpapi.AuditList
	s.api("GET", "/api/v1/audit?limit=200", nil, 200, &audit)
	actions := map[string]int{}
	for _, a := range audit.Items {
		actions[a.Action]++
	}
	if actions["env.export"] != 1 || actions["env.rotate_key"] != 1 || actions["env.reveal"] != 1 {
		t.Fatalf("audit actions %v", actions)
	}
}
