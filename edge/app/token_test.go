package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

func TestEnsureAdminTokenCreatesOnceAndStoresOnlyDigest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := ensureDataDir(dir); err != nil {
		t.Fatal(err)
	}
	first, err := ensureAdminToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !httpapi.ValidTokenSyntax(first.Plaintext) {
		t.Fatalf("token %q has the wrong shape", first.Plaintext)
	}
	if first.Digest != httpapi.DigestToken(first.Plaintext) {
		t.Error("digest does not match the token")
	}
	for name, want := range map[string]os.FileMode{".": 0o700, TokenFileName: 0o600, TokenDigestFileName: 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, st.Mode().Perm(), want)
		}
	}
	digestFile, err := os.ReadFile(filepath.Join(dir, TokenDigestFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(digestFile), first.Plaintext) || strings.Contains(string(digestFile), strings.Split(first.Plaintext, "_")[2]) {
		t.Error("the digest file contains the secret")
	}
	// The second start reads the digest and shows no plaintext.
	second, err := ensureAdminToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second.Plaintext != "" || second.Digest != first.Digest {
		t.Errorf("second start: %+v", second)
	}
	// The CLI reads the plaintext file.
	tok, err := ReadTokenFile(filepath.Join(dir, TokenFileName))
	if err != nil || tok != first.Plaintext {
		t.Errorf("ReadTokenFile = %q, %v", tok, err)
	}
	// Deleting the digest rotates the token.
	if err := os.Remove(filepath.Join(dir, TokenDigestFileName)); err != nil {
		t.Fatal(err)
	}
	third, err := ensureAdminToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if third.Plaintext == "" || third.Plaintext == first.Plaintext || third.Digest == first.Digest {
		t.Error("deleting the digest file did not rotate the token")
	}
}

func TestEnsureAdminTokenRejectsCorruptDigest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenDigestFileName), []byte("sha256:xyz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureAdminToken(dir); err == nil {
		t.Fatal("a corrupt digest file was accepted")
	}
}

func TestReadTokenFileRefusesLooseModesAndJunk(t *testing.T) {
	dir := t.TempDir()
	tok, err := httpapi.NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, []byte(tok), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(loose); err == nil {
		t.Error("a world-readable token file was accepted")
	}
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("password123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(junk); err == nil {
		t.Error("a file without a token was accepted")
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(big); err == nil {
		t.Error("an oversized token file was accepted")
	}
}

func TestEnsureDataDirTightensMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ensureDataDir(dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", st.Mode().Perm())
	}
}

func FuzzParseTokenDigest(f *testing.F) {
	f.Add([]byte("sha256:" + strings.Repeat("ab", 32) + "\n"))
	f.Add([]byte("sha256:"))
	f.Add([]byte("md5:00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseTokenDigest(data)
		if err != nil {
			return
		}
		// A digest that parses re-renders to the same canonical text.
		again, err := parseTokenDigest([]byte("sha256:" + strings.ToLower(strings.TrimPrefix(strings.TrimSpace(string(data)), "sha256:"))))
		if err != nil || again != d {
			t.Fatalf("round trip of %q failed", data)
		}
	})
}
