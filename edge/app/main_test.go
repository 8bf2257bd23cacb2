//go:build linux

package app

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
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

func TestRunWritesTokenToFileOnlyAndServes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	m, out, err := startTestMain(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := m.NewAdminToken()
	if tok == "" || !strings.Contains(out.String(), "http://"+m.Addr()+"/") || !strings.Contains(out.String(), "task add") {
		t.Fatalf("first banner:\n%s", out)
	}
	// The token goes to its 0600 file only, never to stdout (a service's
	// stdout is kept in the journal); the banner says where it is.
	if strings.Contains(out.String(), tok) || strings.Contains(out.String(), strings.Split(tok, "_")[2]) {
		t.Fatalf("the first banner shows the token:\n%s", out)
	}
	tokenPath := filepath.Join(dir, TokenFileName)
	if !strings.Contains(out.String(), tokenPath) {
		t.Fatalf("the first banner does not say where the token is:\n%s", out)
	}
	if st, err := os.Stat(tokenPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", st, err)
	}
	if inFile, err := ReadTokenFile(tokenPath); err != nil || inFile != tok {
		t.Fatalf("token file holds %q (%v), want the new token", inFile, err)
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

// TestRefusedServeCreatesNothing (#27): a configuration refused at start
// (--no-auth beyond loopback, a TLS pair that does not load) leaves no data
// directory behind and logs no "stopped" line before the error.
func TestRefusedServeCreatesNothing(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Main)
		want   string
	}{
		{"no-auth on every interface", func(m *Main) { m.Config.Listen, m.Config.NoAuth = "0.0.0.0:0", true }, "refusing"},
		{"no-auth on an empty host", func(m *Main) { m.Config.Listen, m.Config.NoAuth = ":0", true }, "refusing"},
		{"no-auth on [::]", func(m *Main) { m.Config.Listen, m.Config.NoAuth = "[::]:0", true }, "refusing"},
		{"no-auth on a name that resolves beyond loopback", func(m *Main) {
			m.Config.Listen, m.Config.NoAuth = "everywhere.test:0", true
		}, "refusing"},
		{"missing TLS files", func(m *Main) {
			m.Config.TLSCert, m.Config.TLSKey = "/nonexistent/cert.pem", "/nonexistent/key.pem"
		}, "TLS certificate"},
		{"listen without a port", func(m *Main) { m.Config.Listen = "127.0.0.1" }, "listening on"},
	}
	real := lookupHost
	t.Cleanup(func() { lookupHost = real })
	lookupHost = func(ctx context.Context, host string) ([]net.IPAddr, error) {
		if host == "everywhere.test" {
			return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}, {IP: net.IPv4(192, 0, 2, 7)}}, nil
		}
		return real(ctx, host)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			var logs bytes.Buffer
			_, _, err := startTestMain(t, dir, func(m *Main) {
				c.mutate(m)
				m.Stderr = &logs
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run: %v, want an error with %q", err, c.want)
			}
			if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
				t.Fatalf("the data directory exists after the refusal (%v)", serr)
			}
			if strings.Contains(logs.String(), "stopped") {
				t.Fatalf("a refused start logged \"stopped\":\n%s", logs.String())
			}
		})
	}
}
