package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/controlplane/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestSIGHUPReloadsIngressTrust runs the real binary: serve with the
// worker ingress, change the client CA bundle, send SIGHUP, see the new
// trust generation announced, then SIGTERM ends it cleanly.
func TestSIGHUPReloadsIngressTrust(t *testing.T) {
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ql3-control")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	now := time.Now()
	ca, err := devpki.NewCA("workers", devpki.For(now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.IssueServer(devpki.Leaf{Hosts: []string{"127.0.0.1"}, Validity: devpki.For(now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err := server.WriteFiles(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(dir, "ca.pem")
	if err := devpki.WriteFileAtomic(caPath, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--dsn", db.DSN(""), "--listen", "127.0.0.1:0", "--no-scheduler",
		"--ingress-listen", "127.0.0.1:0", "--ingress-tls-cert", certPath, "--ingress-tls-key", keyPath,
		"--ingress-client-ca", caPath)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	await := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second) // a bound for a hung binary, not a timing assertion
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("ql3-control exited before %q", what)
				}
				if strings.Contains(l, what) {
					return
				}
			case <-deadline:
				t.Fatalf("no %q from ql3-control", what)
			}
		}
	}
	await("worker ingress listening")
	await("admin API listening")

	caB, err := devpki.NewCA("workers B", devpki.For(now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := devpki.WriteFileAtomic(caPath, append(ca.CertPEM(), caB.CertPEM()...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	await(`"trustGeneration":2`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	_ = os.Remove(bin)
}
