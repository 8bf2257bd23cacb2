package app_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/app"
)

func TestPKICommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if _, err := runCmd(t, nil, "pki", "init", "--dir", dir); err != nil {
		t.Fatalf("pki init: %v", err)
	}
	if _, err := runCmd(t, nil, "pki", "init", "--dir", dir); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second pki init without --force: %v, want a refusal", err)
	}
	if _, err := runCmd(t, nil, "pki", "issue-server", "--dir", dir, "--host", "127.0.0.1,ingress.example"); err != nil {
		t.Fatalf("pki issue-server: %v", err)
	}
	out, err := runCmd(t, nil, "pki", "issue-worker", "--dir", dir, "--name", "node-1")
	if err != nil {
		t.Fatalf("pki issue-worker: %v", err)
	}
	if got, want := strings.TrimSpace(out), app.WorkerIdentity("node-1"); got != want {
		t.Fatalf("issue-worker printed %q, want the identity %q", got, want)
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b"} {
		if _, err := runCmd(t, nil, "pki", "issue-worker", "--dir", dir, "--name", bad); err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("issue-worker --name %q: %v, want an error naming the field", bad, err)
		}
	}
	if _, err := runCmd(t, nil, "pki", "init", "--dir", filepath.Join(dir, "x"), "--ttl", "1m"); err == nil || !strings.Contains(err.Error(), "ttl") {
		t.Errorf("pki init --ttl 1m: %v, want an error naming ttl", err)
	}

	wdir := filepath.Join(dir, "workers", "node-1")
	for _, d := range []string{dir, filepath.Join(dir, "workers"), wdir} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v mode %v, want 0700", d, err, st.Mode().Perm())
		}
	}
	for _, f := range []string{"ca.crt", "ca.key", "ingress.crt", "ingress.key", "workers/node-1/client.crt", "workers/node-1/client.key", "workers/node-1/ca.crt"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}

	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	server, err := tls.LoadX509KeyPair(filepath.Join(dir, "ingress.crt"), filepath.Join(dir, "ingress.key"))
	if err != nil {
		t.Fatalf("ingress pair: %v", err)
	}
	if _, err := server.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("ingress certificate does not verify for 127.0.0.1: %v", err)
	}
	client, err := tls.LoadX509KeyPair(filepath.Join(wdir, "client.crt"), filepath.Join(wdir, "client.key"))
	if err != nil {
		t.Fatalf("worker pair: %v", err)
	}
	if _, err := client.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("worker certificate does not verify as a client: %v", err)
	}
	if len(client.Leaf.URIs) != 1 || client.Leaf.URIs[0].String() != app.WorkerIdentity("node-1") {
		t.Errorf("worker certificate URIs %v, want [%s]", client.Leaf.URIs, app.WorkerIdentity("node-1"))
	}
	if client.Leaf.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("worker key algorithm %v, want ECDSA (P-256)", client.Leaf.PublicKeyAlgorithm)
	}

	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, nil, "pki", "init", "--dir", open); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Errorf("pki init in a 0755 directory: %v, want a refusal", err)
	}
}
