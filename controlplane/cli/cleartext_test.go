package cli

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

// clientAgainst runs `project list` against server with a well-formed token.
func clientAgainst(t *testing.T, server string, extra ...string) error {
	t.Helper()
	cmd := Commands()["project list"]
	c := &Client{Stdout: io.Discard, Getenv: func(k string) string {
		if k == "QL3_TOKEN" {
			return "ql3c_0123456789abcdef_" + strings.Repeat("ab", 32)
		}
		return ""
	}, Server: server, CheckToken: checkShape, Print: cmd.Print}
	for _, e := range extra {
		if e != "--insecure" {
			t.Fatalf("clientAgainst takes only --insecure, not %q", e)
		}
		c.Insecure = true
	}
	return cmd.Run(c, context.Background())
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
