package app

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// TestServeDefaultsToLoopback: the admin API listens on loopback unless told.
func TestServeDefaultsToLoopback(t *testing.T) {
	host, _, err := net.SplitHostPort(DefaultConfig().Listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("default listen %q is not a loopback address", DefaultConfig().Listen)
	}
}

// serveErr runs `serve` with args and a DSN that cannot connect, returning
// Run's error: a listen refusal comes before any database work.
func serveErr(t *testing.T, args ...string) error {
	t.Helper()
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	base := []string{"serve", "--no-scheduler", "--dsn", "host=/nonexistent-ql3-test-dir dbname=x connect_timeout=1"}
	if err := m.ParseFlags(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return m.Run(context.Background())
}

// TestServeRefusesPlainHTTPBeyondLoopback: all interfaces without TLS is
// refused (field listen) unless --insecure; loopback is fine.
func TestServeRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	for _, listen := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		err := serveErr(t, "--listen", listen)
		if errs.Field(err) != "listen" || !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("listen %s without TLS: got %v, want a refusal naming listen", listen, err)
		}
	}
	if err := serveErr(t, "--listen", "0.0.0.0:0", "--insecure"); err == nil || errs.Field(err) == "listen" {
		t.Errorf("--insecure: got %v, want it past the listen check (to the database)", err)
	}
	if err := serveErr(t, "--listen", "127.0.0.1:0"); err == nil || errs.Field(err) == "listen" {
		t.Errorf("loopback: got %v, want it past the listen check (to the database)", err)
	}
}
