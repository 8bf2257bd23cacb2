// Package fakeingress is an in-process TLS 1.3 fake of the control plane's
// worker ingress for the worker module's tests: real mTLS (certificates
// generated per test), the v1 protocol bodies, offer replay by offer id and
// token digest, lease expiry on an injected clock, and knobs that drop,
// refuse or black-hole requests. It is deliberately simple; the real
// ingress is tested in the controlplane module.
package fakeingress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TB is the part of testing.TB the fake uses, so the benchmark's fake
// server binary can provide it too.
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// PKI is a test CA with a server and client certificates.
type PKI struct {
	CA     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAPEM  []byte
	serial int64
}

// NewPKI makes a P-256 CA valid from notBefore for a day.
func NewPKI(t TB, notBefore time.Time) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ql3 test CA"},
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &PKI{CA: ca, caKey: key, CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}
}

// Issue returns a PEM certificate and key for cn (server when server is
// true: 127.0.0.1 and localhost as names).
func (p *PKI) Issue(t TB, cn string, server bool, notBefore time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// IdentityFiles writes a worker identity into a fresh 0700 directory and
// returns the paths (credential, cert, key, ca).
type IdentityFiles struct {
	Dir, Credential, Cert, Key, CA string
}

// WriteIdentity writes credential, a new client certificate and the CA.
func (p *PKI) WriteIdentity(t TB, credential string) IdentityFiles {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "identity")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := IdentityFiles{Dir: dir, Credential: filepath.Join(dir, "credential"),
		Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem"), CA: filepath.Join(dir, "ca.pem")}
	cert, key := p.Issue(t, "worker-1", false, p.CA.NotBefore)
	Replace(t, f.Credential, []byte(credential+"\n"), 0o600)
	Replace(t, f.Cert, cert, 0o600)
	Replace(t, f.Key, key, 0o600)
	Replace(t, f.CA, p.CAPEM, 0o600)
	return f
}

// Replace writes data to path atomically (temp + rename), as a rotation
// agent would.
func Replace(t TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Credential returns a well-formed ql3w_ credential for id.
func Credential(id string) string {
	return "ql3w_" + id + "_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
