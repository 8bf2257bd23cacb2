package identity

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"strings"
	"sync"
)

// Paths names the identity files. All four are required.
type Paths struct {
	Credential string // ql3w_<id>_<secret>, ≤ 256 B, 0600 in a 0700 dir
	Cert       string // client certificate chain (PEM), ≤ 1 MiB
	Key        string // its private key (PEM), ≤ 1 MiB, 0600 in a 0700 dir
	CABundle   string // 1–8 trust anchors for the ingress certificate (PEM), ≤ 1 MiB
}

// Credential is one read of the credential file. String never shows the
// secret; Header returns the Authorization value.
type Credential struct {
	ID   string // the credential id (the part between ql3w_ and the secret)
	text string
}

func (c Credential) String() string { return "ql3w_" + c.ID + "_[redacted]" }

// LogValue keeps the secret out of structured logs.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Header is the Authorization header value: the ingress's "Worker" scheme
// (controlplane/ingress).
func (c Credential) Header() string { return "Worker " + c.text }

// ParseCredential checks the shape ql3w_<id>_<secret>: a non-empty id of
// [A-Za-z0-9-] and a secret of 32..128 [A-Za-z0-9]; surrounding whitespace
// (a trailing newline from an editor) is ignored. The error never echoes
// the input.
func ParseCredential(data []byte) (Credential, error) {
	bad := &FileError{"credential", "malformed (want ql3w_<id>_<secret>)"}
	s := strings.TrimSpace(string(data))
	rest, ok := strings.CutPrefix(s, "ql3w_")
	if !ok {
		return Credential{}, bad
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || id == "" || len(id) > 64 || len(secret) < 32 || len(secret) > 128 {
		return Credential{}, bad
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return Credential{}, bad
		}
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return Credential{}, bad
		}
	}
	return Credential{ID: id, text: s}, nil
}

// Material is one consistent view of the transport identity.
type Material struct {
	Cert        *tls.Certificate
	Roots       *x509.CertPool
	Fingerprint [32]byte // SHA-256 over the leaf DER, the key's public half and the CA bundle
}

// Provider re-reads the identity files on use. It is safe for concurrent
// use.
type Provider struct {
	paths Paths
	log   *slog.Logger

	mu        sync.Mutex
	good      *Material // last good cert+key+CA
	certStamp fileStamp
	keyStamp  fileStamp
	caStamp   fileStamp
	torn      bool         // the current stamps did not parse; logged once
	tornAt    [3]fileStamp // stamps of the set that did not parse: not re-read until they change
}

// NewProvider checks that every file is readable and valid now and returns
// a provider. A worker refuses to start without a usable identity.
func NewProvider(paths Paths, log *slog.Logger) (*Provider, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Provider{paths: paths, log: log}
	if _, err := p.Credential(); err != nil {
		return nil, err
	}
	if _, _, err := p.Material(); err != nil {
		return nil, err
	}
	return p, nil
}

// Credential reads and parses the credential file (every request).
func (p *Provider) Credential() (Credential, error) {
	data, _, err := readFile("credential", p.paths.Credential, MaxCredentialBytes, true)
	if err != nil {
		return Credential{}, err
	}
	return ParseCredential(data)
}

// Material returns the current certificate, key and roots, re-reading the
// files when their stamps changed. changed reports a new fingerprint since
// the last call (the caller closes idle connections). When the new files
// do not form a valid set (a torn rotation), the last good material is
// returned with no error; with no good material yet the error is returned.
func (p *Provider) Material() (m *Material, changed bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs, err1 := statFile(p.paths.Cert)
	ks, err2 := statFile(p.paths.Key)
	as, err3 := statFile(p.paths.CABundle)
	if p.good != nil && err1 == nil && err2 == nil && err3 == nil &&
		cs == p.certStamp && ks == p.keyStamp && as == p.caStamp {
		return p.good, false, nil
	}
	if p.good != nil && p.torn && err1 == nil && err2 == nil && err3 == nil && [3]fileStamp{cs, ks, as} == p.tornAt {
		return p.good, false, nil
	}
	fresh, stamps, err := p.load()
	if err != nil {
		if p.good == nil {
			return nil, false, err
		}
		if err1 == nil && err2 == nil && err3 == nil {
			p.tornAt = [3]fileStamp{cs, ks, as}
		}
		if !p.torn {
			p.torn = true
			p.log.Warn("identity files changed but do not form a valid set; keeping the last good certificate", "err", err)
		}
		return p.good, false, nil
	}
	p.torn = false
	p.certStamp, p.keyStamp, p.caStamp = stamps[0], stamps[1], stamps[2]
	if p.good != nil && p.good.Fingerprint == fresh.Fingerprint {
		return p.good, false, nil
	}
	changed = p.good != nil
	p.good = fresh
	if changed {
		p.log.Info("identity certificate or CA bundle changed; new connections use it")
	}
	return fresh, changed, nil
}

func (p *Provider) load() (*Material, [3]fileStamp, error) {
	var stamps [3]fileStamp
	certPEM, cs, err := readFile("certificate", p.paths.Cert, MaxPEMBytes, false)
	if err != nil {
		return nil, stamps, err
	}
	keyPEM, ks, err := readFile("key", p.paths.Key, MaxPEMBytes, true)
	if err != nil {
		return nil, stamps, err
	}
	caPEM, as, err := readFile("CA bundle", p.paths.CABundle, MaxPEMBytes, false)
	if err != nil {
		return nil, stamps, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, stamps, &FileError{"certificate", "certificate and key do not form a pair"}
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, stamps, &FileError{"certificate", "does not parse"}
	}
	pair.Leaf = leaf
	roots, anchors, err := parseBundle(caPEM)
	if err != nil {
		return nil, stamps, err
	}
	h := sha256.New()
	h.Write(pair.Certificate[0])
	h.Write(leaf.RawSubjectPublicKeyInfo)
	for _, a := range anchors {
		h.Write(a)
	}
	m := &Material{Cert: &pair, Roots: roots}
	copy(m.Fingerprint[:], h.Sum(nil))
	stamps = [3]fileStamp{cs, ks, as}
	return m, stamps, nil
}

// parseBundle accepts 1..MaxAnchors CERTIFICATE blocks and nothing else.
func parseBundle(data []byte) (*x509.CertPool, [][]byte, error) {
	pool := x509.NewCertPool()
	var raws [][]byte
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, nil, &FileError{"CA bundle", "holds a " + block.Type + " block; only CERTIFICATE is allowed"}
		}
		if len(raws) == MaxAnchors {
			return nil, nil, &FileError{"CA bundle", "holds more than 8 certificates"}
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, &FileError{"CA bundle", "holds a certificate that does not parse"}
		}
		pool.AddCert(c)
		raws = append(raws, block.Bytes)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, nil, &FileError{"CA bundle", "has trailing data that is not PEM"}
	}
	if len(raws) < MinAnchors {
		return nil, nil, &FileError{"CA bundle", "holds no certificate"}
	}
	return pool, raws, nil
}
