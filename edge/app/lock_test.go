//go:build linux

package app

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecondServerOnSameDataDirRefused: a second server on a data dir in
// use stops at the lock, naming the holder's pid — on the same port (not
// "address in use" after recovery) and on another port (never beside it).
// The first keeps serving; once it stops, the directory is free again.
func TestSecondServerOnSameDataDirRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, _, err := startTestMain(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("in use by ql3-edge pid %d", os.Getpid())
	for _, listen := range []string{first.Addr(), "127.0.0.1:0"} {
		_, _, err := startTestMain(t, dir, func(m *Main) { m.Config.Listen = listen })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("second server on %s: %v, want %q", listen, err, want)
		}
	}
	resp, err := http.Get("http://" + first.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the first server stopped answering: %d", resp.StatusCode)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := startTestMain(t, dir, nil); err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
}

// TestNoAuthJudgedByBoundAddress: --no-auth is allowed by where the socket
// was bound, not by how --listen is spelled. A resolver that maps
// "localhost" to every interface is stood in for by binding 0.0.0.0.
func TestNoAuthJudgedByBoundAddress(t *testing.T) {
	real := listenTCP
	t.Cleanup(func() { listenTCP = real })
	listenTCP = func(network, addr string) (net.Listener, error) {
		if addr == "localhost:0" {
			addr = "0.0.0.0:0"
		}
		return real(network, addr)
	}
	_, _, err := startTestMain(t, t.TempDir(), func(m *Main) {
		m.Config.Listen = "localhost:0"
		m.Config.NoAuth = true
	})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("--no-auth on localhost bound to 0.0.0.0: %v", err)
	}
	listenTCP = real
	if _, _, err := startTestMain(t, t.TempDir(), func(m *Main) {
		m.Config.Listen = "localhost:0"
		m.Config.NoAuth = true
	}); err != nil {
		t.Fatalf("--no-auth on localhost bound to loopback: %v", err)
	}
}

// TestPlainHTTPBeyondLoopbackWarns: plain HTTP on every interface starts
// (the token guards it) but says, in the log, that the token travels in
// clear text.
func TestPlainHTTPBeyondLoopbackWarns(t *testing.T) {
	var logs bytes.Buffer
	if _, _, err := startTestMain(t, t.TempDir(), func(m *Main) {
		m.Config.Listen = "0.0.0.0:0"
		m.Stderr = &logs
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "plain HTTP beyond loopback") {
		t.Fatalf("no warning in the log:\n%s", logs.String())
	}
	logs.Reset()
	if _, _, err := startTestMain(t, t.TempDir(), func(m *Main) { m.Stderr = &logs }); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "plain HTTP") {
		t.Fatalf("warned on loopback:\n%s", logs.String())
	}
}

// TestServeTLS: with --tls-cert/--tls-key the API answers HTTPS only and the
// banner shows https URLs.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certPEM, certFile, keyFile := selfSigned(t, dir)
	m, out, err := startTestMain(t, filepath.Join(dir, "data"), func(m *Main) {
		m.Config.TLSCert, m.Config.TLSKey = certFile, keyFile
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "https://"+m.Addr()+"/") {
		t.Errorf("banner without the https URL:\n%s", out)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + m.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("https healthz: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + m.Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered 200 on the TLS listener")
		}
	}
	if _, _, err := startTestMain(t, t.TempDir(), func(m *Main) { m.Config.TLSCert = certFile }); err == nil {
		t.Fatal("--tls-cert without --tls-key accepted")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certPEM []byte, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ql3-edge test"},
		NotBefore: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM, certFile, keyFile
}
