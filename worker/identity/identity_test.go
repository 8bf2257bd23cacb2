package identity_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/worker/identity"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

func setup(t *testing.T) (*fakeingress.PKI, fakeingress.IdentityFiles, identity.Paths) {
	pki := fakeingress.NewPKI(t, time.Now().Add(-time.Hour))
	f := pki.WriteIdentity(t, fakeingress.Credential("cred-a"))
	return pki, f, identity.Paths{Credential: f.Credential, Cert: f.Cert, Key: f.Key, CABundle: f.CA}
}

func wantRefused(t *testing.T, err error, role, rule string) {
	t.Helper()
	var fe *identity.FileError
	if !errors.As(err, &fe) || fe.Role != role || !strings.Contains(fe.Rule, rule) {
		t.Fatalf("got %v, want identity %s refused (%s)", err, role, rule)
	}
	if strings.Contains(err.Error(), "/") {
		t.Fatalf("the error names a path: %v", err)
	}
}

func TestRefusesWorldReadableCredential(t *testing.T) {
	_, f, paths := setup(t)
	if err := os.Chmod(f.Credential, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := identity.NewProvider(paths, nil)
	wantRefused(t, err, "credential", "0600")
}

func TestRefusesSymlinkedCredential(t *testing.T) {
	_, f, paths := setup(t)
	real := filepath.Join(f.Dir, "real-credential")
	if err := os.Rename(f.Credential, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, f.Credential); err != nil {
		t.Fatal(err)
	}
	_, err := identity.NewProvider(paths, nil)
	wantRefused(t, err, "credential", "symbolic link")
}

func TestRefusesOpenDirectoryAndBadShapes(t *testing.T) {
	_, f, paths := setup(t)
	if err := os.Chmod(f.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := identity.NewProvider(paths, nil)
	wantRefused(t, err, "credential", "0700")
	if err := os.Chmod(f.Dir, 0o700); err != nil {
		t.Fatal(err)
	}

	fakeingress.Replace(t, f.Credential, []byte(strings.Repeat("x", 257)), 0o600)
	_, err = identity.NewProvider(paths, nil)
	wantRefused(t, err, "credential", "limit is 256")
	fakeingress.Replace(t, f.Credential, []byte("ql3c_abc_0123456789abcdef0123456789abcdef"), 0o600)
	_, err = identity.NewProvider(paths, nil)
	wantRefused(t, err, "credential", "malformed")
}

func TestCredentialNeverPrinted(t *testing.T) {
	c, err := identity.ParseCredential([]byte(fakeingress.Credential("cred-a") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "cred-a" || strings.Contains(c.String(), "0123456789abcdef") || !strings.HasPrefix(c.Header(), "Worker ql3w_cred-a_") {
		t.Fatalf("id %q string %q", c.ID, c.String())
	}
}

func TestCABundleLimits(t *testing.T) {
	pki, f, paths := setup(t)
	nine := []byte(strings.Repeat(string(pki.CAPEM), 9))
	fakeingress.Replace(t, f.CA, nine, 0o600)
	_, err := identity.NewProvider(paths, nil)
	wantRefused(t, err, "CA bundle", "more than 8")
	fakeingress.Replace(t, f.CA, []byte("\n"), 0o600)
	_, err = identity.NewProvider(paths, nil)
	wantRefused(t, err, "CA bundle", "no certificate")
	key, _ := os.ReadFile(f.Key)
	fakeingress.Replace(t, f.CA, append(append([]byte{}, pki.CAPEM...), key...), 0o600)
	_, err = identity.NewProvider(paths, nil)
	wantRefused(t, err, "CA bundle", "only CERTIFICATE")
}

// A rotation that replaced the certificate but not yet the key keeps the
// last good pair; once the key follows, the new pair is used and reported
// as a change.
func TestTornPairKeepsLastGood(t *testing.T) {
	pki, f, paths := setup(t)
	p, err := identity.NewProvider(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := p.Material()
	if err != nil {
		t.Fatal(err)
	}
	cert, key := pki.Issue(t, "worker-1", false, pki.CA.NotBefore)
	fakeingress.Replace(t, f.Cert, cert, 0o600)
	torn, changed, err := p.Material()
	if err != nil || changed || torn.Fingerprint != first.Fingerprint {
		t.Fatalf("torn pair: err %v changed %v, want the last good pair", err, changed)
	}
	fakeingress.Replace(t, f.Key, key, 0o600)
	fresh, changed, err := p.Material()
	if err != nil || !changed || fresh.Fingerprint == first.Fingerprint {
		t.Fatalf("completed rotation: err %v changed %v", err, changed)
	}
	if again, changed, _ := p.Material(); changed || again != fresh {
		t.Fatal("an unchanged set must not count as a change")
	}
}

func FuzzParseCredential(f *testing.F) {
	f.Add([]byte(fakeingress.Credential("cred-a")))
	f.Add([]byte("ql3w__"))
	f.Add([]byte("ql3w_" + strings.Repeat("0", 32) + "_" + strings.Repeat("0", 32)))
	f.Add([]byte("ql3c_x_0123456789abcdef0123456789abcdef"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := identity.ParseCredential(data)
		if err != nil {
			if strings.Contains(err.Error(), string(data)) && len(data) > 8 {
				t.Fatalf("the error echoes the input: %v", err)
			}
			return
		}
		text := strings.TrimSpace(string(data))
		id, secret, _ := strings.Cut(strings.TrimPrefix(text, "ql3w_"), "_")
		// The string form shows the public id and nothing of the secret.
		// Compared whole, not by searching for the secret: an id equal to
		// the secret (the fuzzer's "ql3w_0…0_0…0") is not a leak.
		if c.ID == "" || c.ID != id || len(secret) < 32 || c.String() != "ql3w_"+id+"_[redacted]" || c.Header() != "Worker "+text {
			t.Fatalf("accepted %q as id %q (string %q)", data, c.ID, c.String())
		}
	})
}
