package cli

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTokenRefusedOverCleartextBeyondLoopback (#27): the CLI does not send
// the admin token over http:// to a non-loopback address unless --insecure
// (or QL3_INSECURE), with ql3-control's rule and words (core/cleartext);
// an IP literal is refused before any traffic, and loopback, a request
// without a token and --insecure still go through.
func TestTokenRefusedOverCleartextBeyondLoopback(t *testing.T) {
	const token = "ql3c_0123456789abcdef_0123456789abcdef0123456789abcdef0123456789abcdef"
	var hits atomic.Int32
	var sawToken atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			sawToken.Store(true)
		}
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

	run := func(addr string, env map[string]string, extra ...string) (int, string) {
		t.Helper()
		e, _, errOut := testEnv(env)
		code := Run(t.Context(), append([]string{"task", "list", "--addr", addr, "--data-dir", t.TempDir()}, extra...), e)
		return code, errOut.String()
	}
	withToken := map[string]string{"QL3_TOKEN": token}

	for _, addr := range []string{"192.0.2.10:5700", "http://192.0.2.10:5700", "[2001:db8::1]:5700"} {
		code, stderr := run(addr, withToken)
		if code != ExitError || !strings.Contains(stderr, "refusing to send the API token over plain http:// to a non-loopback address") ||
			!strings.Contains(stderr, "use https:// or pass --insecure") || !strings.Contains(stderr, "field addr") {
			t.Errorf("%s: exit %d, stderr %q", addr, code, stderr)
		}
	}
	if ip := nonLoopbackIPv4(t); ip != "" {
		remote := net.JoinHostPort(ip, port)
		if code, stderr := run(remote, withToken); code != ExitError || !strings.Contains(stderr, "--insecure") {
			t.Errorf("%s with a token: exit %d, stderr %q", remote, code, stderr)
		}
		if hits.Load() != 0 {
			t.Fatalf("%d requests reached the server before --insecure", hits.Load())
		}
		if code, stderr := run(remote, withToken, "--insecure"); code != ExitOK {
			t.Errorf("%s --insecure: exit %d, stderr %q", remote, code, stderr)
		}
		if code, stderr := run(remote, map[string]string{"QL3_TOKEN": token, "QL3_INSECURE": "1"}); code != ExitOK {
			t.Errorf("%s QL3_INSECURE=1: exit %d, stderr %q", remote, code, stderr)
		}
		if code, stderr := run(remote, nil); code != ExitOK {
			t.Errorf("%s without a token: exit %d, stderr %q", remote, code, stderr)
		}
	}
	for _, addr := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		if code, stderr := run(addr, withToken); code != ExitOK {
			t.Errorf("%s (loopback): exit %d, stderr %q", addr, code, stderr)
		}
	}
	if !sawToken.Load() {
		t.Fatal("the token never reached the server on loopback")
	}
	if code, stderr := run("127.0.0.1:"+port, map[string]string{"QL3_TOKEN": token, "QL3_INSECURE": "maybe"}); code != ExitError ||
		!strings.Contains(stderr, "QL3_INSECURE") {
		t.Errorf("QL3_INSECURE=maybe: exit %d, stderr %q", code, stderr)
	}
}

// nonLoopbackIPv4 returns an IPv4 address of this machine that is not
// loopback, or "" when there is none (the IP-literal cases still hold then).
func nonLoopbackIPv4(t *testing.T) string {
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
