package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// clientAgainst runs `project list` against server with a well-formed token.
func clientAgainst(t *testing.T, server string, extra ...string) error {
	t.Helper()
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "QL3_TOKEN" {
			return "ql3c_0123456789abcdef_" + strings.Repeat("ab", 32)
		}
		return ""
	}}
	if err := m.ParseFlags(append([]string{"project", "list", "--server", server}, extra...)); err != nil {
		t.Fatal(err)
	}
	return m.Run(context.Background())
}

// TestClientRefusesCleartextTokenBeyondLoopback: the token is not sent over
// http:// to a non-loopback address (no request leaves) unless --insecure.
func TestClientRefusesCleartextTokenBeyondLoopback(t *testing.T) {
	err := clientAgainst(t, "http://192.0.2.10:5800")
	if errs.Field(err) != "server" || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("non-loopback IP: got %v", err)
	}
	// A host name is judged by the address it connects to: a server on a
	// non-loopback interface of this machine is refused by name as well.
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"items":[]}`)
	}))
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := nonLoopbackIP(t); ip != "" {
		if err := clientAgainst(t, "http://"+net.JoinHostPort(ip, port)); errs.Field(err) != "server" {
			t.Errorf("non-loopback %s: got %v", ip, err)
		}
		if err := clientAgainst(t, "http://"+net.JoinHostPort(ip, port), "--insecure"); err != nil {
			t.Errorf("non-loopback with --insecure: %v", err)
		}
	}
	if hits.Load() > 1 {
		t.Fatalf("%d requests reached the server; only the --insecure one may", hits.Load())
	}
	if err := clientAgainst(t, "http://localhost:"+port); err != nil {
		t.Errorf("localhost (connects to loopback): %v", err)
	}
}

// nonLoopbackIP returns one IPv4 address of this machine that is not
// loopback, or "" when the machine has none (the IP-literal case above still
// covers the refusal then).
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
