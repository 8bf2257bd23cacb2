// Package envcrypt encrypts the values of ql3-edge's env store at rest
// (ADR 0038): AES-256-GCM from the standard library, a random data key for
// the values, wrapped by a key-encryption key (KEK) that lives only in a
// key file next to the database (or wherever --env-key-file says).
//
// Key file: one line "ql3-env-key-v1:<id>:<base64url of 32 random bytes>"
// (the id is 16 random hex digits naming the key, not derived from it),
// created 0600 with O_EXCL on first start, replaced atomically (temporary
// file, fsync, rename, directory fsync) by a rotation. A key file that the
// group or others may read is refused, as is anything that is not a
// regular file or is larger than 256 bytes. Every error names the file.
//
// Ciphertexts: nonce (12 random bytes) || AES-256-GCM(value), with
// additional data binding it to the entry's id and name, so a ciphertext
// copied to another row or renamed does not open.
package envcrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DefaultKeyFileName is the key file's name inside the data directory.
const DefaultKeyFileName = "env.key"

const (
	keyPrefix   = "ql3-env-key-v1:"
	keyBytes    = 32
	maxKeyFile  = 256
	nonceBytes  = 12
	wrapDomain  = "ql3/env/data-key/v1\x00"
	valueDomain = "ql3/env/value/v1\x00"
	idBytes     = 8
)

// KEK is a key-encryption key read from (or written to) a key file.
type KEK struct {
	key  [keyBytes]byte
	id   string // 16 random hex digits naming which KEK wrapped a data key (not derived from the key)
	path string
}

// ID names the KEK (random, written next to it in the key file; it says
// nothing about the key).
func (k *KEK) ID() string { return k.id }

// Path is the key file the KEK came from or goes to.
func (k *KEK) Path() string { return k.path }

// NewKEK returns a fresh random KEK (and id) destined for path.
func NewKEK(path string) (*KEK, error) {
	var (
		key [keyBytes]byte
		id  [idBytes]byte
	)
	if _, err := rand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("env key: random source: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("env key: random source: %w", err)
	}
	return &KEK{key: key, id: hex.EncodeToString(id[:]), path: path}, nil
}

// KeyFileError says what is wrong with a key file; it always names it.
type KeyFileError struct {
	Path   string
	Reason string
	Err    error
}

func (e *KeyFileError) Error() string {
	msg := "env key file " + e.Path + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *KeyFileError) Unwrap() error { return e.Err }

// ErrNoKeyFile is wrapped by LoadKeyFile when the file does not exist.
var ErrNoKeyFile = errors.New("no such key file")

// LoadKeyFile reads a KEK from path. The file must be a regular file, not
// readable by group or others, at most 256 bytes, in the key format.
func LoadKeyFile(path string) (*KEK, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &KeyFileError{Path: path, Reason: "does not exist", Err: ErrNoKeyFile}
	}
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be opened", Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be read", Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &KeyFileError{Path: path, Reason: "is not a regular file"}
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, &KeyFileError{Path: path, Reason: fmt.Sprintf("is readable or writable by group or others (mode %04o); run chmod 600 on it", perm)}
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be read", Err: err}
	}
	if len(raw) > maxKeyFile {
		return nil, &KeyFileError{Path: path, Reason: fmt.Sprintf("is larger than %d bytes; it is not an env key file", maxKeyFile)}
	}
	text, ok := strings.CutPrefix(strings.TrimSpace(string(raw)), keyPrefix)
	if !ok {
		return nil, &KeyFileError{Path: path, Reason: "is not an env key file (expected one line " + keyPrefix + "…)"}
	}
	id, text, ok := strings.Cut(text, ":")
	idRaw, idErr := hex.DecodeString(id)
	b, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if !ok || idErr != nil || len(idRaw) != idBytes || hex.EncodeToString(idRaw) != id || err != nil || len(b) != keyBytes {
		return nil, &KeyFileError{Path: path, Reason: "holds a damaged key (expected <16 hex id>:<32 bytes of base64url>)"}
	}
	k := &KEK{id: id, path: path}
	copy(k.key[:], b)
	return k, nil
}

// CreateKeyFile writes a fresh KEK to path, which must not exist yet
// (O_EXCL, 0600), and syncs the file and its directory.
func CreateKeyFile(path string) (*KEK, error) {
	k, err := NewKEK(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be created", Err: err}
	}
	if err := writeKey(f, k); err != nil {
		os.Remove(path)
		return nil, &KeyFileError{Path: path, Reason: "cannot be written", Err: err}
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, &KeyFileError{Path: path, Reason: "directory cannot be synced", Err: err}
	}
	return k, nil
}

// ReplaceKeyFile writes k to k.Path() atomically: a temporary 0600 file in
// the same directory, fsync, rename over the old file, directory fsync.
func ReplaceKeyFile(k *KEK) error {
	dir := filepath.Dir(k.path)
	f, err := os.CreateTemp(dir, ".env.key-*")
	if err != nil {
		return &KeyFileError{Path: k.path, Reason: "cannot create a temporary file next to it", Err: err}
	}
	tmp := f.Name()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(tmp)
		return &KeyFileError{Path: k.path, Reason: "cannot restrict the temporary file", Err: err}
	}
	if err := writeKey(f, k); err != nil {
		os.Remove(tmp)
		return &KeyFileError{Path: k.path, Reason: "cannot be written", Err: err}
	}
	if err := os.Rename(tmp, k.path); err != nil {
		os.Remove(tmp)
		return &KeyFileError{Path: k.path, Reason: "cannot be replaced", Err: err}
	}
	if err := syncDir(dir); err != nil {
		return &KeyFileError{Path: k.path, Reason: "directory cannot be synced", Err: err}
	}
	return nil
}

func writeKey(f *os.File, k *KEK) error {
	_, err := f.WriteString(keyPrefix + k.id + ":" + base64.RawURLEncoding.EncodeToString(k.key[:]) + "\n")
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func gcm(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return a
}

func seal(a cipher.AEAD, plaintext, aad []byte) []byte {
	out := make([]byte, nonceBytes, nonceBytes+len(plaintext)+a.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(fmt.Sprintf("env crypto: random source: %v", err)) // crypto/rand does not fail on supported systems
	}
	return a.Seal(out, out[:nonceBytes], plaintext, aad)
}

func open(a cipher.AEAD, blob, aad []byte) ([]byte, error) {
	if len(blob) < nonceBytes+a.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	return a.Open(nil, blob[:nonceBytes], blob[nonceBytes:], aad)
}

// NewDataKey returns a fresh random data key.
func NewDataKey() ([]byte, error) {
	k := make([]byte, keyBytes)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("env key: random source: %w", err)
	}
	return k, nil
}

// Wrap encrypts a data key under k.
func (k *KEK) Wrap(dataKey []byte) []byte {
	return seal(gcm(k.key[:]), dataKey, []byte(wrapDomain+k.id))
}

// Unwrap opens a data key wrapped by Wrap. A wrong KEK is a KeyFileError
// naming the key file.
func (k *KEK) Unwrap(wrapped []byte) ([]byte, error) {
	dk, err := open(gcm(k.key[:]), wrapped, []byte(wrapDomain+k.id))
	if err != nil || len(dk) != keyBytes {
		return nil, &KeyFileError{Path: k.path, Reason: "does not open this database's env data key (wrong or damaged key file)"}
	}
	return dk, nil
}

// Cipher seals and opens env values under a data key. Safe for concurrent
// use.
type Cipher struct {
	aead cipher.AEAD
}

// NewCipher returns a Cipher for a 32-byte data key.
func NewCipher(dataKey []byte) (*Cipher, error) {
	if len(dataKey) != keyBytes {
		return nil, fmt.Errorf("env data key must be %d bytes, got %d", keyBytes, len(dataKey))
	}
	return &Cipher{aead: gcm(dataKey)}, nil
}

func valueAAD(id, name string) []byte {
	return []byte(valueDomain + id + "\x00" + name)
}

// Seal encrypts the value of entry id named name.
func (c *Cipher) Seal(id, name, value string) []byte {
	return seal(c.aead, []byte(value), valueAAD(id, name))
}

// Open decrypts what Seal returned for the same id and name.
func (c *Cipher) Open(id, name string, blob []byte) (string, error) {
	v, err := open(c.aead, blob, valueAAD(id, name))
	if err != nil {
		return "", fmt.Errorf("env entry %s: ciphertext does not open under the data key (damaged, or moved from another entry)", id)
	}
	return string(v), nil
}
