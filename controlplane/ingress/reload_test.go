package ingress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/core/protocol"
)

func (e *env) writeBundle(pems ...[]byte) {
	e.t.Helper()
	if err := devpki.WriteFileAtomic(e.files.ClientCAFile, []byte(strings.Join(bytesToStrings(pems), "")), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func (e *env) status(sessionID string) string {
	e.t.Helper()
	var s string
	if err := e.db.Conn(e.t).QueryRow(context.Background(), `SELECT status FROM ql3.worker_sessions WHERE session_id = $1`, sessionID).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// rawRequest writes one HTTP/1.1 request on conn in two parts: head
// (which makes the server's connection active) and the rest.
func rawRequest(path, cred string, body []byte) (head, rest string) {
	full := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAuthorization: Worker %s\r\nContent-Length: %d\r\n\r\n%s",
		path, cred, len(body), body)
	return full[:10], full[10:]
}

func TestTrustReloadRefusesOldGenerationSockets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{crl: true})
	w := e.worker("w")
	st := e.open(e.client(w.cert), w)

	roots := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(e.dir, "server-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(pem)
	conn, err := tls.Dial("tcp", e.srv.Addr(), &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{w.cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	head, rest := rawRequest(protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID))
	if _, err := conn.Write([]byte(head + rest)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request on the socket: %v %v", resp, err)
	}
	resp.Body.Close()

	// The next request starts on the old socket, then the trust changes
	// (CA A + a new CA B): the request must not be served.
	head, rest = rawRequest(protocol.PathSessionTransition, w.cred, transitionBody(t, st, protocol.SessionDraining))
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	caB, err := devpki.NewCA("ql3 test workers B", devpki.For(e.now, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	e.writeBundle(e.ca.CertPEM(), caB.CertPEM())
	if err := e.srv.Reload(); err != nil || e.srv.TrustGeneration() != 2 {
		t.Fatalf("reload to A+B: %v, generation %d", err, e.srv.TrustGeneration())
	}
	_, _ = conn.Write([]byte(rest))
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("old-generation socket: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || !resp.Close {
		t.Fatalf("old-generation socket answered %d (close %v), want 421 and close", resp.StatusCode, resp.Close)
	}
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("the old-generation socket stayed open")
	}
	if s := e.status(st.SessionID); s != "online" {
		t.Fatalf("a request on an old-generation socket was applied: session %s", s)
	}

	// A new connection with A's certificate is verified under generation 2.
	e.must(e.client(w.cert), protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)

	// Trust only B now: A's certificate is refused at the handshake, B's works.
	e.writeCRL(caB)
	e.writeBundle(caB.CertPEM())
	if err := e.srv.Reload(); err != nil || e.srv.TrustGeneration() != 3 {
		t.Fatalf("reload to B: %v, generation %d", err, e.srv.TrustGeneration())
	}
	if _, _, err := e.post(e.client(w.cert), protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID)); err == nil {
		t.Fatal("a certificate of a CA no longer trusted was accepted")
	}
	pairB, err := caB.IssueClient(devpki.Leaf{CommonName: "w", URIs: []string{w.identity}, Validity: devpki.For(e.now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	cb := e.client(pairB.TLS())
	e.must(cb, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)

	// Bad material keeps the current context and generation.
	for name, bad := range map[string][]byte{
		"garbage":       []byte("not a certificate"),
		"empty":         nil,
		"17 CAs":        []byte(strings.Repeat(string(caB.CertPEM()), 17)),
		"a leaf, no CA": devpki.CertPEM(pairB.Cert),
	} {
		e.writeBundle(bad)
		if err := e.srv.Reload(); err == nil {
			t.Errorf("%s: reload accepted bad material", name)
		}
		if g := e.srv.TrustGeneration(); g != 3 {
			t.Fatalf("%s: generation moved to %d", name, g)
		}
		e.must(e.client(pairB.TLS()), protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)
	}
	e.writeBundle(caB.CertPEM())
	e.writeCRL(e.ca) // signed by a CA that is no longer trusted
	if err := e.srv.Reload(); err == nil || e.srv.TrustGeneration() != 3 {
		t.Fatalf("a CRL of an untrusted CA: %v, generation %d", err, e.srv.TrustGeneration())
	}

	// A CRL that revokes B's certificate: refused from the next handshake.
	e.writeCRL(caB, pairB.Cert)
	if err := e.srv.Reload(); err != nil || e.srv.TrustGeneration() != 4 {
		t.Fatalf("reload with the CRL: %v, generation %d", err, e.srv.TrustGeneration())
	}
	before := len(e.denials())
	if _, _, err := e.post(e.client(pairB.TLS()), protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID)); err == nil {
		t.Fatal("a revoked certificate was accepted")
	}
	if got := e.denials(); len(got) != before+1 || got[len(got)-1] != "cert_revoked" {
		t.Fatalf("denials after the CRL: %v", got)
	}
}

func (e *env) writeCRL(ca *devpki.CA, revoked ...*x509.Certificate) {
	e.t.Helper()
	e.crlNumber++
	crl, err := ca.CRL(e.crlNumber, e.now.Add(-time.Minute), e.now.Add(time.Hour), revoked...)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := devpki.WriteFileAtomic(e.files.CRLFile, crl, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// A new server certificate is served from the next handshake without a
// new trust generation; a key file others may write is refused.
func TestServerCertificateReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	serverCA := e.serverCA(t)
	next, err := serverCA.IssueServer(devpki.Leaf{CommonName: "ingress-2", Hosts: []string{"127.0.0.1", "localhost"}, Validity: devpki.For(e.now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := next.WriteFiles(e.dir, "server"); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil || e.srv.TrustGeneration() != 1 {
		t.Fatalf("server certificate reload: %v, generation %d", err, e.srv.TrustGeneration())
	}
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Cert)
	conn, err := tls.Dial("tcp", e.srv.Addr(), &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{w.cert}})
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if served.SerialNumber.Cmp(next.Cert.SerialNumber) != 0 {
		t.Fatalf("served %s, want the reloaded certificate", served.Subject.CommonName)
	}
	if err := os.Chmod(e.files.KeyFile, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("a world-writable key was accepted: %v", err)
	}
	e.open(e.client(w.cert), w) // the running context still serves
}
