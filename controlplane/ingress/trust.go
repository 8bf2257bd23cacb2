package ingress

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/controlplane"
)

// TLS material limits (DESIGN.md §8).
const (
	MaxTLSFileBytes = 1 << 20 // certificate, key, CA bundle and CRL files
	MinClientCAs    = 1
	MaxClientCAs    = 16
)

// TLSFiles names the ingress's TLS material. Paths must be absolute.
type TLSFiles struct {
	CertFile     string // server certificate chain (PEM)
	KeyFile      string // server private key (PEM); not group/world-writable
	ClientCAFile string // 1–16 CA certificates that issue worker client certificates
	CRLFile      string // optional: PEM CRLs, each signed by one of the client CAs
}

// material is one consistent, validated reading of the files.
type material struct {
	cert     tls.Certificate
	roots    *x509.CertPool
	revoked  map[string]map[string]struct{} // issuer RawSubject → serial (decimal) → revoked
	trustSum [32]byte                       // SHA-256 over the CA bundle and CRL bytes
	certSum  [32]byte                       // SHA-256 over the certificate and key bytes
}

// generation is what connections are verified under. A new generation
// starts whenever the trust material (CA bundle or CRL) changes; a server
// certificate swap keeps the generation.
type generation struct {
	n uint64
	m *material
}

// trustStore holds the current generation and reloads it from the files.
// Bad new material never replaces good material.
type trustStore struct {
	files TLSFiles
	cur   atomic.Pointer[generation]
	mu    sync.Mutex // serialises reloads
	stamp string     // size+mtime of the files at the last reload attempt
}

func newTrustStore(files TLSFiles) (*trustStore, error) {
	for name, p := range map[string]string{"tls-cert": files.CertFile, "tls-key": files.KeyFile, "client-ca": files.ClientCAFile} {
		if p == "" {
			return nil, fmt.Errorf("ingress: %s file is required", name)
		}
	}
	for _, p := range []string{files.CertFile, files.KeyFile, files.ClientCAFile, files.CRLFile} {
		if p != "" && !filepath.IsAbs(p) {
			return nil, fmt.Errorf("ingress: TLS file paths must be absolute, got a relative one")
		}
	}
	t := &trustStore{files: files}
	m, err := loadMaterial(files)
	if err != nil {
		return nil, err
	}
	t.stamp = t.fileStamp()
	t.cur.Store(&generation{n: 1, m: m})
	return t, nil
}

func (t *trustStore) current() *generation { return t.cur.Load() }

// reload re-reads the files. It returns whether the trust generation
// changed; on any error the current material stays as it is.
func (t *trustStore) reload() (trustChanged bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stamp = t.fileStamp()
	m, err := loadMaterial(t.files)
	if err != nil {
		return false, err
	}
	old := t.cur.Load()
	switch {
	case m.trustSum != old.m.trustSum:
		t.cur.Store(&generation{n: old.n + 1, m: m})
		return true, nil
	case m.certSum != old.m.certSum:
		t.cur.Store(&generation{n: old.n, m: m})
	}
	return false, nil
}

// changedOnDisk reports whether any file's size or modification time
// differs from the last reload attempt (the cheap periodic check; the
// contents are compared by reload).
func (t *trustStore) changedOnDisk() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fileStamp() != t.stamp
}

func (t *trustStore) fileStamp() string {
	var b bytes.Buffer
	for _, p := range []string{t.files.CertFile, t.files.KeyFile, t.files.ClientCAFile, t.files.CRLFile} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%d:%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("missing;")
		}
	}
	return b.String()
}

// readBounded reads a file of at most MaxTLSFileBytes. what names it in
// errors (never the path of a key in a log line: callers log what).
func readBounded(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingress: read %s: %w", what, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxTLSFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ingress: read %s: %w", what, err)
	}
	if len(data) > MaxTLSFileBytes {
		return nil, fmt.Errorf("ingress: %s is larger than %d bytes", what, MaxTLSFileBytes)
	}
	return data, nil
}

func loadMaterial(files TLSFiles) (*material, error) {
	if fi, err := os.Stat(files.KeyFile); err == nil && fi.Mode().Perm()&0o022 != 0 {
		return nil, errors.New("ingress: the TLS key file must not be group- or world-writable")
	}
	certPEM, err := readBounded(files.CertFile, "TLS certificate")
	if err != nil {
		return nil, err
	}
	keyPEM, err := readBounded(files.KeyFile, "TLS key")
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errors.New("ingress: TLS certificate and key do not form a valid pair")
	}
	caPEM, err := readBounded(files.ClientCAFile, "client CA bundle")
	if err != nil {
		return nil, err
	}
	cas, err := parseCABundle(caPEM)
	if err != nil {
		return nil, err
	}
	m := &material{cert: cert, roots: x509.NewCertPool(), revoked: map[string]map[string]struct{}{}}
	for _, ca := range cas {
		m.roots.AddCert(ca)
	}
	var crlPEM []byte
	if files.CRLFile != "" {
		if crlPEM, err = readBounded(files.CRLFile, "CRL"); err != nil {
			return nil, err
		}
		if err := m.addCRLs(crlPEM, cas); err != nil {
			return nil, err
		}
	}
	h := sha256.New()
	h.Write(caPEM)
	h.Write([]byte{0})
	h.Write(crlPEM)
	copy(m.trustSum[:], h.Sum(nil))
	h.Reset()
	h.Write(certPEM)
	h.Write([]byte{0})
	h.Write(keyPEM)
	copy(m.certSum[:], h.Sum(nil))
	return m, nil
}

// parseCABundle accepts 1–16 CA certificates and nothing else.
func parseCABundle(data []byte) ([]*x509.Certificate, error) {
	var cas []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				return nil, errors.New("ingress: client CA bundle holds data that is not PEM")
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("ingress: client CA bundle holds a %q block; only certificates are allowed", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("ingress: client CA bundle: certificate %d: %v", len(cas)+1, err)
		}
		if !c.IsCA {
			return nil, fmt.Errorf("ingress: client CA bundle: certificate %d is not a CA", len(cas)+1)
		}
		cas = append(cas, c)
		if len(cas) > MaxClientCAs {
			return nil, fmt.Errorf("ingress: client CA bundle holds more than %d certificates", MaxClientCAs)
		}
	}
	if len(cas) < MinClientCAs {
		return nil, errors.New("ingress: client CA bundle holds no certificate")
	}
	return cas, nil
}

// addCRLs parses PEM CRLs; each must be signed by one of the CAs.
func (m *material) addCRLs(data []byte, cas []*x509.Certificate) error {
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				return errors.New("ingress: CRL file holds data that is not PEM")
			}
			break
		}
		if block.Type != "X509 CRL" {
			return fmt.Errorf("ingress: CRL file holds a %q block", block.Type)
		}
		crl, err := x509.ParseRevocationList(block.Bytes)
		if err != nil {
			return fmt.Errorf("ingress: CRL %d: %v", n+1, err)
		}
		var issuer *x509.Certificate
		for _, ca := range cas {
			if bytes.Equal(ca.RawSubject, crl.RawIssuer) && crl.CheckSignatureFrom(ca) == nil {
				issuer = ca
				break
			}
		}
		if issuer == nil {
			return fmt.Errorf("ingress: CRL %d is not signed by a CA of the client bundle", n+1)
		}
		set := m.revoked[string(issuer.RawSubject)]
		if set == nil {
			set = map[string]struct{}{}
			m.revoked[string(issuer.RawSubject)] = set
		}
		for _, e := range crl.RevokedCertificateEntries {
			set[e.SerialNumber.String()] = struct{}{}
		}
		n++
	}
	if n == 0 {
		return errors.New("ingress: CRL file holds no CRL")
	}
	return nil
}

// verifyClient checks a client chain against the generation's roots and
// CRLs at time now. It returns a denial reason ("" when the chain is good).
func (m *material) verifyClient(certs []*x509.Certificate, now time.Time) string {
	if len(certs) == 0 {
		return controlplane.ReasonNoClientCert
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{Roots: m.roots, Intermediates: inter,
		CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		var inv x509.CertificateInvalidError
		if errors.As(err, &inv) && inv.Reason == x509.Expired {
			return controlplane.ReasonCertExpired
		}
		return controlplane.ReasonUntrustedCert
	}
	for _, chain := range chains {
		for _, c := range chain[:len(chain)-1] { // the root itself is trusted by configuration
			if set := m.revoked[string(c.RawIssuer)]; set != nil {
				if _, bad := set[c.SerialNumber.String()]; bad {
					return controlplane.ReasonCertRevoked
				}
			}
		}
	}
	return ""
}
