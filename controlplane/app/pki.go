package app

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/core/errs"
)

// The dev PKI commands (issue #12): a CA, an ingress server certificate and
// one client certificate per worker, ECDSA P-256 (RSA handshakes are slow
// on MIPS routers), every file 0600 in a 0700 directory. They read no
// database and no admin API: a cluster's certificates exist before it does.
//
//	ql3-control pki init --dir D [--name N]                 D/ca.crt, D/ca.key
//	ql3-control pki issue-server --dir D --host H[,H...]    D/ingress.crt, D/ingress.key
//	ql3-control pki issue-worker --dir D --name W           D/workers/W/{client.crt,client.key,ca.crt}
//
// issue-worker prints the identity to bind with
// `ql3-control worker register --name W --tls-identity <identity>`.

// pkiArgs are the pki commands' flags.
type pkiArgs struct {
	dir, name, hosts, out string
	ttl                   time.Duration
	force                 bool
}

// workerNamePattern is what a worker certificate name may be: it becomes a
// directory name and part of a URI, so no separators or dots at the start.
var workerNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Validity bounds of the dev PKI.
const (
	defaultCATTL   = 5 * 365 * 24 * time.Hour
	defaultLeafTTL = 365 * 24 * time.Hour
	maxPKITTL      = 20 * 365 * 24 * time.Hour
)

// WorkerIdentity is the URI SAN a worker certificate named name carries
// and the value workers.tls_identity binds.
func WorkerIdentity(name string) string { return "spiffe://ql3/worker/" + name }

func pkiCommands() map[string]command {
	dir := func(fs *flag.FlagSet, a *cmdArgs) {
		fs.StringVar(&a.pki.dir, "dir", "", "PKI directory (created 0700; required)")
		fs.DurationVar(&a.pki.ttl, "ttl", 0, "certificate lifetime (default: CA 5 years, leaves 1 year)")
		fs.BoolVar(&a.pki.force, "force", false, "replace existing files")
	}
	return map[string]command{
		"pki init": {summary: "create a dev CA (ca.crt, ca.key) in --dir", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			dir(fs, a)
			fs.StringVar(&a.pki.name, "name", "ql3 dev CA", "CA common name")
		}, run: (*Main).pkiInit},
		"pki issue-server": {summary: "issue the worker ingress certificate (ingress.crt, ingress.key)", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			dir(fs, a)
			fs.StringVar(&a.pki.hosts, "host", "127.0.0.1,localhost", "comma-separated DNS names and IPs the ingress is reached at")
			fs.StringVar(&a.pki.name, "name", "ingress", "file name (without .crt/.key)")
		}, run: (*Main).pkiIssueServer},
		"pki issue-worker": {summary: "issue a worker client certificate and print its tls identity", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			dir(fs, a)
			fs.StringVar(&a.pki.name, "name", "", "worker name (required; the identity is "+WorkerIdentity("<name>")+")")
			fs.StringVar(&a.pki.out, "out", "", "directory for client.crt, client.key and ca.crt (default <dir>/workers/<name>)")
		}, run: (*Main).pkiIssueWorker},
	}
}

func (a pkiArgs) validity(def time.Duration) (devpki.Validity, error) {
	ttl := a.ttl
	if ttl == 0 {
		ttl = def
	}
	if ttl < time.Hour || ttl > maxPKITTL {
		return devpki.Validity{}, errs.Invalidf("ttl", "must be between 1h and %s", maxPKITTL)
	}
	// The clock is read here, at the edge; devpki takes the time as a parameter.
	return devpki.For(time.Now(), ttl), nil
}

// pkiDir checks --dir and creates it 0700 (an existing one must not be
// readable by group or others).
func (a pkiArgs) pkiDir() (string, error) {
	if a.dir == "" {
		return "", errs.Invalidf("dir", "is required")
	}
	return a.dir, privateDir(a.dir, "dir")
}

func privateDir(dir, field string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.Invalidf(field, "cannot create the directory: %v", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return errs.Invalidf(field, "%v", err)
	}
	if !st.IsDir() {
		return errs.Invalidf(field, "is not a directory")
	}
	if st.Mode().Perm()&0o077 != 0 {
		return errs.Invalidf(field, "directory is accessible by group or others (mode %#o); use 0700", st.Mode().Perm())
	}
	return nil
}

// writePrivate writes files (name → content) 0600 into dir, refusing to
// replace any existing one unless force.
func writePrivate(dir string, force bool, files map[string][]byte, order ...string) error {
	if !force {
		for _, n := range order {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				return errs.E(errs.Conflict, "dir", "%s already exists (--force replaces it)", n)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	for _, n := range order {
		if err := devpki.WriteFileAtomic(filepath.Join(dir, n), files[n], 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (m *Main) pkiInit(context.Context) error {
	a := m.args.pki
	dir, err := a.pkiDir()
	if err != nil {
		return err
	}
	v, err := a.validity(defaultCATTL)
	if err != nil {
		return err
	}
	ca, err := devpki.NewCA(a.name, v)
	if err != nil {
		return err
	}
	key, err := devpki.KeyPEM(ca.Key)
	if err != nil {
		return err
	}
	if err := writePrivate(dir, a.force, map[string][]byte{"ca.key": key, "ca.crt": ca.CertPEM()}, "ca.key", "ca.crt"); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "CA %q valid until %s: %s\n", a.name, v.NotAfter.UTC().Format(time.RFC3339), filepath.Join(dir, "ca.crt"))
	return err
}

// loadCA reads <dir>/ca.crt and <dir>/ca.key.
func loadCA(dir string) (*devpki.CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, errs.Invalidf("dir", "no CA here (run `ql3-control pki init` first): %v", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, errs.Invalidf("dir", "cannot read ca.key: %v", err)
	}
	// The standard pair loader parses both PEM blocks and checks that the
	// key belongs to the certificate.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errs.Invalidf("dir", "ca.crt/ca.key: %v", err)
	}
	cert := pair.Leaf
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if cert == nil || !ok || !cert.IsCA {
		return nil, errs.Invalidf("dir", "ca.crt/ca.key are not a CA certificate and its key")
	}
	return &devpki.CA{Cert: cert, Key: signer}, nil
}

func (m *Main) pkiIssueServer(context.Context) error {
	a := m.args.pki
	dir, err := a.pkiDir()
	if err != nil {
		return err
	}
	if !workerNamePattern.MatchString(a.name) {
		return errs.Invalidf("name", "must be 1-63 of [A-Za-z0-9._-], starting with a letter or digit")
	}
	var hosts []string
	for _, h := range strings.Split(a.hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 || len(hosts) > 32 {
		return errs.Invalidf("host", "needs 1 to 32 names or addresses")
	}
	ca, err := loadCA(dir)
	if err != nil {
		return err
	}
	v, err := a.validity(defaultLeafTTL)
	if err != nil {
		return err
	}
	pair, err := ca.IssueServer(devpki.Leaf{CommonName: hosts[0], Hosts: hosts, Validity: v})
	if err != nil {
		return err
	}
	key, err := devpki.KeyPEM(pair.Key)
	if err != nil {
		return err
	}
	files := map[string][]byte{a.name + ".key": key, a.name + ".crt": devpki.CertPEM(pair.Cert)}
	if err := writePrivate(dir, a.force, files, a.name+".key", a.name+".crt"); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "ingress certificate for %s: %s (key %s)\n", strings.Join(hosts, ", "),
		filepath.Join(dir, a.name+".crt"), a.name+".key")
	return err
}

func (m *Main) pkiIssueWorker(context.Context) error {
	a := m.args.pki
	dir, err := a.pkiDir()
	if err != nil {
		return err
	}
	if !workerNamePattern.MatchString(a.name) {
		return errs.Invalidf("name", "must be 1-63 of [A-Za-z0-9._-], starting with a letter or digit")
	}
	out := a.out
	if out == "" {
		if err := privateDir(filepath.Join(dir, "workers"), "dir"); err != nil {
			return err
		}
		out = filepath.Join(dir, "workers", a.name)
	}
	if err := privateDir(out, "out"); err != nil {
		return err
	}
	ca, err := loadCA(dir)
	if err != nil {
		return err
	}
	v, err := a.validity(defaultLeafTTL)
	if err != nil {
		return err
	}
	identity := WorkerIdentity(a.name)
	pair, err := ca.IssueClient(devpki.Leaf{CommonName: a.name, URIs: []string{identity}, Validity: v})
	if err != nil {
		return err
	}
	key, err := devpki.KeyPEM(pair.Key)
	if err != nil {
		return err
	}
	// The worker trusts the CA that signed the ingress certificate; in the
	// dev PKI that is this CA (a rotation writes a bundle over ca.crt).
	files := map[string][]byte{"client.key": key, "client.crt": devpki.CertPEM(pair.Cert), "ca.crt": ca.CertPEM()}
	if err := writePrivate(out, a.force, files, "client.key", "client.crt", "ca.crt"); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%s\n", identity)
	if err == nil {
		_, err = fmt.Fprintf(m.Stderr, "worker %s: certificate, key and CA in %s; bind it with\n  ql3-control worker register --name %s --tls-identity %s\n",
			a.name, out, a.name, identity)
	}
	return err
}
