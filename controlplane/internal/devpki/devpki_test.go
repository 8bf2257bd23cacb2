package devpki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIssueVerifyRevoke(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("test", For(now, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient(Leaf{CommonName: "r1", URIs: []string{"spiffe://ql3/worker/r1"}, Validity: For(now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	verify := func(c *x509.Certificate, at time.Time, usage x509.ExtKeyUsage) error {
		_, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	if err := verify(client.Cert, now, x509.ExtKeyUsageClientAuth); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	if err := verify(client.Cert, now, x509.ExtKeyUsageServerAuth); err == nil {
		t.Fatal("a client certificate must not serve")
	}
	if err := verify(client.Cert, now.Add(2*time.Hour), x509.ExtKeyUsageClientAuth); err == nil {
		t.Fatal("an expired certificate verified")
	}
	if len(client.Cert.URIs) != 1 || client.Cert.URIs[0].String() != "spiffe://ql3/worker/r1" {
		t.Fatalf("URI SANs: %v", client.Cert.URIs)
	}
	server, err := ca.IssueServer(Leaf{Hosts: []string{"127.0.0.1", "ingress.example"}, Validity: For(now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(server.Cert.IPAddresses) != 1 || len(server.Cert.DNSNames) != 1 {
		t.Fatalf("server SANs: %v %v", server.Cert.IPAddresses, server.Cert.DNSNames)
	}
	if _, err := ca.IssueClient(Leaf{Validity: For(now, time.Hour)}); err == nil {
		t.Fatal("a certificate without any name was issued")
	}
	if _, err := ca.IssueClient(Leaf{URIs: []string{"no scheme"}, Validity: For(now, time.Hour)}); err == nil {
		t.Fatal("a relative URI SAN was accepted")
	}

	crlPEM, err := ca.CRL(7, now, now.Add(time.Hour), client.Cert)
	if err != nil {
		t.Fatal(err)
	}
	crl, err := parseCRL(crlPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := crl.CheckSignatureFrom(ca.Cert); err != nil || len(crl.RevokedCertificateEntries) != 1 ||
		crl.RevokedCertificateEntries[0].SerialNumber.Cmp(client.Cert.SerialNumber) != 0 {
		t.Fatalf("CRL: %v %+v", err, crl.RevokedCertificateEntries)
	}

	dir := t.TempDir()
	certPath, keyPath, err := client.WriteFiles(dir, "worker")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{certPath: 0o644, keyPath: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want %v", filepath.Base(path), fi.Mode(), err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}
