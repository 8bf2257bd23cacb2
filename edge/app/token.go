package app

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/edge/httpapi"
)

// File names inside the data directory. The server reads only the digest;
// the plaintext file exists for the CLI and the operator. Deleting the digest
// file and restarting rotates the token.
const (
	TokenFileName       = "admin.token"
	TokenDigestFileName = "admin.token.sha256"
	maxTokenFileBytes   = 256 // DESIGN.md §8: credential files ≤ 256 B
)

// adminToken is the outcome of ensureAdminToken.
type adminToken struct {
	Digest    httpapi.TokenDigest
	Plaintext string // set only when the token was created by this call
}

// ensureAdminToken loads the stored admin token digest from dataDir, or on
// first start generates a token and writes its plaintext (0600) and its
// SHA-256 (0600). The plaintext file is written first and the digest file
// last, each atomically, so a crash between the two only means the next start
// generates a fresh token.
func ensureAdminToken(dataDir string) (adminToken, error) {
	digestPath := filepath.Join(dataDir, TokenDigestFileName)
	data, err := readSmallFile(digestPath)
	switch {
	case err == nil:
		d, perr := parseTokenDigest(data)
		if perr != nil {
			return adminToken{}, fmt.Errorf("%s: %w (delete it and restart to issue a new token)", digestPath, perr)
		}
		return adminToken{Digest: d}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return adminToken{}, err
	}
	tok, err := httpapi.NewAdminToken()
	if err != nil {
		return adminToken{}, fmt.Errorf("generating the admin token: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dataDir, TokenFileName), []byte(tok+"\n")); err != nil {
		return adminToken{}, err
	}
	d := httpapi.DigestToken(tok)
	if err := writeFileAtomic(digestPath, []byte("sha256:"+hex.EncodeToString(d[:])+"\n")); err != nil {
		return adminToken{}, err
	}
	return adminToken{Digest: d, Plaintext: tok}, nil
}

func parseTokenDigest(data []byte) (httpapi.TokenDigest, error) {
	var d httpapi.TokenDigest
	s, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "sha256:")
	if !ok || len(s) != 2*len(d) {
		return d, errors.New("malformed admin token digest")
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, errors.New("malformed admin token digest")
	}
	return d, nil
}

// ReadTokenFile reads an admin token from path, refusing files readable by
// group or others (a token anyone on the box can read is no token).
func ReadTokenFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is accessible by group or others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	data, err := readSmallFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if !httpapi.ValidTokenSyntax(tok) {
		return "", fmt.Errorf("%s does not hold an admin token (ql3c_<id>_<secret>)", path)
	}
	return tok, nil
}

func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTokenFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxTokenFileBytes)
	}
	return data, nil
}

// writeFileAtomic writes data to path with mode 0600 via a synced temporary
// file and a rename, then syncs the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after a successful rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ensureDataDir creates dir with mode 0700, or tightens an existing one that
// others can enter: it holds the database, logs and the token.
func ensureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restricting the data directory to its owner: %w", err)
		}
	}
	return nil
}
