// Package devpki issues a small X.509 PKI for development and tests: a CA,
// server certificates for the worker ingress and client certificates for
// workers, and CRLs. Keys are ECDSA P-256 (fast enough on 32-bit MIPS
// routers, unlike RSA), serials are 128 random bits, and every time is a
// parameter (no clock reads), so tests can build expired or not-yet-valid
// material deterministically. `ql3-control pki` (issue #12) is meant to
// wrap it.
package devpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that can issue leaf certificates and CRLs.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Pair is an issued certificate with its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Validity is the [NotBefore, NotAfter] window of a certificate.
type Validity struct{ NotBefore, NotAfter time.Time }

// For returns the window [now - 1 h, now + ttl] (the hour absorbs small
// clock skew between issuer and verifier).
func For(now time.Time, ttl time.Duration) Validity {
	return Validity{NotBefore: now.Add(-time.Hour), NotAfter: now.Add(ttl)}
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil // never 0
}

// NewCA makes a self-signed CA named name.
func NewCA(name string, v Validity) (*CA, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name, Organization: []string{"ql3"}},
		NotBefore: v.NotBefore, NotAfter: v.NotAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLen: 0, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Leaf describes a certificate to issue. Hosts become DNS or IP SANs; URIs
// become URI SANs (e.g. "spiffe://ql3/worker/router-1").
type Leaf struct {
	CommonName string
	Hosts      []string
	URIs       []string
	Validity   Validity
}

// IssueServer issues a TLS server certificate.
func (ca *CA) IssueServer(l Leaf) (*Pair, error) {
	return ca.issue(l, x509.ExtKeyUsageServerAuth)
}

// IssueClient issues a TLS client certificate (a worker's identity).
func (ca *CA) IssueClient(l Leaf) (*Pair, error) {
	return ca.issue(l, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(l Leaf, usage x509.ExtKeyUsage) (*Pair, error) {
	if l.CommonName == "" && len(l.Hosts) == 0 && len(l.URIs) == 0 {
		return nil, errors.New("devpki: a certificate needs a common name, a host or a URI")
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: l.CommonName},
		NotBefore: l.Validity.NotBefore, NotAfter: l.Validity.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
	}
	for _, h := range l.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	for _, raw := range l.URIs {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("devpki: %q is not an absolute URI", raw)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, Key: key}, nil
}

// CRL returns a PEM CRL signed by ca that revokes the given certificates,
// valid from thisUpdate until nextUpdate.
func (ca *CA) CRL(number int64, thisUpdate, nextUpdate time.Time, revoked ...*x509.Certificate) ([]byte, error) {
	entries := make([]x509.RevocationListEntry, 0, len(revoked))
	for _, c := range revoked {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: thisUpdate})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(number), ThisUpdate: thisUpdate, NextUpdate: nextUpdate,
		RevokedCertificateEntries: entries,
	}, ca.Cert, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), nil
}

// CertPEM is the certificate in PEM.
func CertPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// KeyPEM is the private key in PKCS #8 PEM.
func KeyPEM(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// CertPEM is the CA certificate in PEM (a one-certificate bundle).
func (ca *CA) CertPEM() []byte { return CertPEM(ca.Cert) }

// TLS returns the pair as a tls.Certificate.
func (p *Pair) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{p.Cert.Raw}, PrivateKey: p.Key, Leaf: p.Cert}
}

// WriteFiles writes the pair to dir as <name>.crt (0644) and <name>.key
// (0600) and returns both paths. Files are written to a temporary name and
// renamed, so a reader never sees half a file.
func (p *Pair) WriteFiles(dir, name string) (certPath, keyPath string, err error) {
	keyPEM, err := KeyPEM(p.Key)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := WriteFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := WriteFileAtomic(certPath, CertPEM(p.Cert), 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
