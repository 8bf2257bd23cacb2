package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// caRotation rotates the workers' client CA with an overlap: the ingress
// trusts A+B (SIGHUP), the worker switches to a B certificate (same
// identity) and keeps running tasks, the ingress trusts B only (SIGHUP),
// and a socket presenting the old A certificate is refused. It runs last:
// the dev PKI directory's ca.crt ends as B's bundle.
func caRotation(t *testing.T, c *cluster) {
	cp := c.liveControl()
	var w *worker
	c.mu.Lock()
	for _, name := range []string{"w2", "w1"} {
		if x := c.workers[name]; x != nil && x.alive() && x.env[0] == "QL3_INGRESS_URL=https://"+cp.ingress {
			w = x
			break
		}
	}
	c.mu.Unlock()
	if w == nil {
		t.Fatal("no live worker attached to the live replica")
	}
	// Only w runs tasks from here on, so a success proves its new certificate.
	// A worker attached to the replica killed earlier cannot finish a drain
	// when it still holds a completion that replica never answered (it
	// keeps it journaled until a receipt, ADR 0019): it is SIGKILLed, as
	// its supervisor would after the stop timeout. Workers on a live
	// replica drain.
	c.mu.Lock()
	var others []*worker
	for _, x := range c.workers {
		if x != w && x.alive() {
			others = append(others, x)
		}
	}
	c.mu.Unlock()
	for _, x := range others {
		if x.env[0] == "QL3_INGRESS_URL=https://"+cp.ingress {
			x.stop(t, syscall.SIGTERM, 40*time.Second)
		} else {
			x.stop(t, syscall.SIGKILL, 10*time.Second)
		}
	}
	pkiB := filepath.Join(c.dir, "pki-b")
	c.mustCLI("pki", "init", "--dir", pkiB, "--name", "ql3 dev CA B")
	caA, err := os.ReadFile(filepath.Join(c.pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caB, err := os.ReadFile(filepath.Join(pkiB, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(c.pki, "ca.crt") // the replicas' --ingress-client-ca
	replace := func(path string, data []byte) {
		t.Helper()
		tmp := path + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	runOne := func(what string) {
		t.Helper()
		task := c.createTask(fmt.Sprintf("ca-%d", time.Now().UnixNano()), `{"kind":"qinglong/command@v1","shell":{"command":"echo ca"},"concurrency":"allow"}`)
		run := c.runNow(task)
		c.eventually(60*time.Second, what+": a run succeeded", func() bool { return c.runStatus(run) == "succeeded" })
		if got := c.text(`SELECT w.name FROM ql3.attempts a JOIN ql3.workers w USING (worker_id) WHERE a.run_id = $1`, run); got != w.name {
			t.Errorf("%s: the run ran on %s, want %s", what, got, w.name)
		}
	}

	// 1. Trust A+B.
	replace(bundle, append(append([]byte{}, caA...), caB...))
	_ = cp.cmd.Process.Signal(syscall.SIGHUP)
	// 2. The worker switches to a certificate of B with the same identity.
	out := filepath.Join(c.dir, "w-b")
	c.mustCLI("pki", "issue-worker", "--dir", pkiB, "--name", w.name, "--out", out)
	wdir := filepath.Join(c.pki, "workers", w.name)
	oldCert, err := tls.LoadX509KeyPair(filepath.Join(wdir, "client.crt"), filepath.Join(wdir, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"client.key", "client.crt"} {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		replace(filepath.Join(wdir, f), data)
	}
	runOne("trust A+B, worker on B")
	// 3. Trust B only.
	replace(bundle, caB)
	_ = cp.cmd.Process.Signal(syscall.SIGHUP)
	c.waitOnline(w.name)
	runOne("trust B only")
	// 4. A socket with the old A certificate is refused.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caA) // the ingress's server certificate is still A's
	conn, err := tls.Dial("tcp", cp.ingress, &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots,
		ServerName: "127.0.0.1", Certificates: []tls.Certificate{oldCert}})
	if err == nil {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = fmt.Fprintf(conn, "POST /v1/sessions/heartbeat HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\n{}", cp.ingress)
		if err == nil {
			var resp *http.Response
			resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("a socket with the old A certificate was answered %s after trusting B only", resp.Status)
			}
		}
	}
	t.Logf("old-certificate socket refused: %v", err)
	if !w.alive() {
		t.Errorf("%s exited during the rotation", w.name)
	}
}
