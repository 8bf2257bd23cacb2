//go:build linux

package app

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/worker/clock"
)

func startTestMain(t *testing.T, dataDir string, mutate func(*Main)) (*Main, *bytes.Buffer, error) {
	t.Helper()
	m := NewMain()
	var out bytes.Buffer
	m.Stdout, m.Stderr, m.Getenv = &out, &bytes.Buffer{}, func(string) string { return "" }
	m.Clock = clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	m.Config.DataDir = dataDir
	m.Config.Listen = "127.0.0.1:0"
	if mutate != nil {
		mutate(m)
	}
	err := m.Run(context.Background())
	t.Cleanup(func() { _ = m.Close() })
	return m, &out, err
}

func TestRunPrintsTokenOnceAndServes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	m, out, err := startTestMain(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := m.NewAdminToken()
	if tok == "" || !strings.Contains(out.String(), tok) || !strings.Contains(out.String(), "http://"+m.Addr()+"/") ||
		!strings.Contains(out.String(), "task add") {
		t.Fatalf("first banner:\n%s", out)
	}
	resp, err := http.Get("http://" + m.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("readyz %d", resp.StatusCode)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	m2, out2, err := startTestMain(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m2.NewAdminToken() != "" || strings.Contains(out2.String(), tok) {
		t.Errorf("the token was shown again:\n%s", out2)
	}
	if !strings.Contains(out2.String(), filepath.Join(dir, TokenFileName)) {
		t.Errorf("the banner does not say where the token is:\n%s", out2)
	}
}

func TestRunRefusesNoAuthOffLoopback(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, _, err := startTestMain(t, t.TempDir(), func(m *Main) {
			m.Config.Listen = listen
			m.Config.NoAuth = true
		})
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("--no-auth on %s: %v", listen, err)
		}
	}
	m, out, err := startTestMain(t, t.TempDir(), func(m *Main) { m.Config.NoAuth = true })
	if err != nil {
		t.Fatalf("--no-auth on loopback: %v", err)
	}
	if m.NewAdminToken() != "" || !strings.Contains(out.String(), "auth:          disabled") {
		t.Errorf("no-auth banner:\n%s", out)
	}
}

func TestRunFailsCleanlyOnBusyPort(t *testing.T) {
	first, _, err := startTestMain(t, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = startTestMain(t, t.TempDir(), func(m *Main) { m.Config.Listen = first.Addr() })
	if err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Fatalf("second server on a busy port: %v", err)
	}
}
