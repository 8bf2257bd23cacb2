// Package envseal is the at-rest format of env store values (ADR 0038),
// one for both binaries: AES-256-GCM (standard library) with a random
// 256-bit data key, the data key wrapped by a key-encryption key (KEK).
//
//   - A value: nonce (12 random bytes) ‖ AES-256-GCM(value), additional
//     data "ql3/env/value/v1\0<entry id>\0<name>": a ciphertext copied to
//     another entry or renamed does not open.
//   - A wrapped data key: the same layout under the KEK, additional data
//     "ql3/env/data-key/v1\0<KEK id>".
//   - A KEK's text form (a key file's one line):
//     "ql3-env-key-v1:<16 hex random id>:<base64url of 32 bytes>". The id
//     names the KEK (which one wrapped a data key); it is random, not
//     derived from the key.
//
// No file or database I/O here: adapters read and write the key file and
// the ciphertexts. Randomness comes from crypto/rand.
package envseal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	// KeyTextPrefix starts a KEK's text form.
	KeyTextPrefix = "ql3-env-key-v1:"
	keyBytes      = 32
	idBytes       = 8
	nonceBytes    = 12
	wrapDomain    = "ql3/env/data-key/v1\x00"
	valueDomain   = "ql3/env/value/v1\x00"
)

// KEK is a key-encryption key with its id.
type KEK struct {
	key [keyBytes]byte
	id  string
}

// ID names the KEK.
func (k KEK) ID() string { return k.id }

// NewKEK returns a fresh random KEK with a fresh random id.
func NewKEK() (KEK, error) {
	var (
		k  KEK
		id [idBytes]byte
	)
	if _, err := rand.Read(k.key[:]); err != nil {
		return KEK{}, fmt.Errorf("env key: random source: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return KEK{}, fmt.Errorf("env key: random source: %w", err)
	}
	k.id = hex.EncodeToString(id[:])
	return k, nil
}

// Text is the KEK's text form (without a line break). It holds the key:
// write it only to a 0600 key file.
func (k KEK) Text() string {
	return KeyTextPrefix + k.id + ":" + base64.RawURLEncoding.EncodeToString(k.key[:])
}

// ErrNotKeyText and ErrDamagedKey are ParseKEK's refusals.
var (
	ErrNotKeyText = errors.New("not an env key (expected one line " + KeyTextPrefix + "…)")
	ErrDamagedKey = errors.New("a damaged env key (expected <16 hex id>:<32 bytes of base64url>)")
)

// ParseKEK reads a KEK's text form; surrounding white space is ignored.
func ParseKEK(text string) (KEK, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), KeyTextPrefix)
	if !ok {
		return KEK{}, ErrNotKeyText
	}
	id, enc, ok := strings.Cut(rest, ":")
	idRaw, idErr := hex.DecodeString(id)
	b, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if !ok || idErr != nil || len(idRaw) != idBytes || hex.EncodeToString(idRaw) != id || err != nil || len(b) != keyBytes {
		return KEK{}, ErrDamagedKey
	}
	k := KEK{id: id}
	copy(k.key[:], b)
	return k, nil
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

// ErrWrongKEK is Unwrap's refusal: not the KEK that wrapped it, or damaged.
var ErrWrongKEK = errors.New("does not open the env data key (wrong or damaged key)")

// Wrap encrypts a data key under k.
func (k KEK) Wrap(dataKey []byte) []byte {
	return seal(gcm(k.key[:]), dataKey, []byte(wrapDomain+k.id))
}

// Unwrap opens a data key wrapped by Wrap.
func (k KEK) Unwrap(wrapped []byte) ([]byte, error) {
	dk, err := open(gcm(k.key[:]), wrapped, []byte(wrapDomain+k.id))
	if err != nil || len(dk) != keyBytes {
		return nil, ErrWrongKEK
	}
	return dk, nil
}

// Cipher seals and opens values under a data key. Safe for concurrent use.
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
