package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/app"
	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
)

// TestServeStartsWorkerIngress: serve with ingress TLS material starts the
// mTLS listener on its own port and pool; a worker opens a session over
// it; Close stops everything (no goroutine left). Not parallel: the leak
// check must not see other tests' goroutines.
func TestServeStartsWorkerIngress(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	now := time.Now()
	dir := t.TempDir()
	ca, err := devpki.NewCA("workers", devpki.For(now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.IssueServer(devpki.Leaf{CommonName: "ingress", Hosts: []string{"127.0.0.1"}, Validity: devpki.For(now, time.Hour)})
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
	pub := publication.NewPublisher(db.Pool(t, postgres.RoleAdmin), publication.PublisherOptions{})
	w, err := pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: "r1", TLSIdentity: "spiffe://ql3/worker/r1"})
	if err != nil {
		t.Fatal(err)
	}
	cred, text, err := pub.IssueWorkerCredential(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient(devpki.Leaf{CommonName: "r1", URIs: []string{"spiffe://ql3/worker/r1"}, Validity: devpki.For(now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	ignore := goleak.IgnoreCurrent()
	var logs bytes.Buffer
	m := &app.Main{Stdout: io.Discard, Stderr: &logs, Getenv: func(string) string { return "" }, Version: "test"}
	if err := m.ParseFlags([]string{"serve", "--dsn", db.DSN(""), "--listen", "127.0.0.1:0", "--no-scheduler",
		"--ingress-listen", "127.0.0.1:0", "--ingress-tls-cert", certPath, "--ingress-tls-key", keyPath,
		"--ingress-client-ca", caPath}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = m.Close()
		}
	}()
	if m.IngressAddr() == "" {
		t.Fatal("the worker ingress did not start")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{client.TLS()}}}
	body, err := protocol.SessionOpen{AgentVersion: "t/1", CredentialID: cred.ID, Capacity: 1,
		Capabilities: placement.Capabilities{OS: "linux", Arch: "arm"}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://"+m.IngressAddr()+protocol.PathSessionOpen, bytes.NewReader(body))
	req.Header.Set("Authorization", "Worker "+text)
	req.Header.Set("Content-Type", "application/json") // as the worker sends it
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tr.CloseIdleConnections()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open over the served ingress: %d %s", resp.StatusCode, raw)
	}
	st, err := protocol.DecodeSessionState(raw)
	if err != nil || st.Generation != 1 {
		t.Fatalf("state: %+v %v", st, err)
	}
	// The dispatcher is wired in: an idle pull is 204 with Retry-After.
	pull, err := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: 1,
		OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseToken: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest(http.MethodPost, "https://"+m.IngressAddr()+protocol.PathOfferPull, bytes.NewReader(pull))
	req.Header.Set("Authorization", "Worker "+text)
	req.Header.Set("Content-Type", "application/json")
	resp, err = (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("idle pull: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := m.Reload(); err != nil {
		t.Fatalf("reload of unchanged material: %v", err)
	}
	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), text) {
		t.Fatal("the credential reached the log")
	}
	goleak.VerifyNone(t, ignore)
}

func TestIngressConfigValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--ingress-tls-cert", "/x/c.pem"}, "ingress-tls-key"},
		{[]string{"--ingress-tls-cert", "c.pem", "--ingress-tls-key", "/k", "--ingress-client-ca", "/ca"}, "ingress-tls-cert"},
		{[]string{"--ingress-crl", "/crl"}, "ingress-crl"},
		{[]string{"--ingress-tls-cert", "/c", "--ingress-tls-key", "/k", "--ingress-client-ca", "/ca", "--ingress-max-conns", "17"}, "ingress-max-conns"},
		{[]string{"--credential-reconcile-ms", "10"}, "credential-reconcile-ms"},
	} {
		m := &app.Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
		if err := m.ParseFlags(append([]string{"serve", "--dsn", "postgres://x@127.0.0.1:1/db", "--no-scheduler"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		_ = m.Close()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.field)
		}
	}
}
