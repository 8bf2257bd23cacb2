// Package totp computes and checks time-based one-time passwords (RFC 6238,
// built on HOTP, RFC 4226) for the second sign-in factor of ql3 accounts,
// and formats the otpauth:// URI authenticator apps scan.
//
// Everything here is a pure function of its inputs: the caller passes the
// time and remembers the last accepted counter (so a code is accepted at
// most once).
package totp

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// Defaults every common authenticator app uses: SHA-1, 6 digits, 30 s.
const (
	DefaultDigits = 6
	DefaultPeriod = 30 * time.Second
	// SecretBytes is the size of a generated secret (160 bits, RFC 4226 §4).
	SecretBytes = 20
	// Skew is how many periods before and after now are accepted, for
	// clocks a little apart.
	Skew = 1
	// maxSecretText bounds a base32 secret given as text.
	maxSecretText = 128
)

// Algorithm is the HMAC hash of a code.
type Algorithm string

// The algorithms RFC 6238 names.
const (
	SHA1   Algorithm = "SHA1"
	SHA256 Algorithm = "SHA256"
	SHA512 Algorithm = "SHA512"
)

func (a Algorithm) hash() func() hash.Hash {
	switch a {
	case SHA256:
		return sha256.New
	case SHA512:
		return sha512.New
	default:
		return sha1.New
	}
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewSecret reads SecretBytes random bytes from rand and returns them as
// unpadded base32, the form authenticator apps accept.
func NewSecret(rand io.Reader) (string, error) {
	var b [SecretBytes]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", err
	}
	return b32.EncodeToString(b[:]), nil
}

// DecodeSecret parses a base32 secret, ignoring case, spaces and padding.
func DecodeSecret(s string) ([]byte, error) {
	if len(s) > maxSecretText {
		return nil, errs.Invalidf("secret", "at most %d characters", maxSecretText)
	}
	s = strings.ToUpper(strings.TrimRight(strings.ReplaceAll(s, " ", ""), "="))
	key, err := b32.DecodeString(s)
	if err != nil || len(key) < 10 {
		return nil, errs.Invalidf("secret", "must be base32 of at least 80 bits")
	}
	return key, nil
}

// Counter is the RFC 6238 time step T of t for period.
func Counter(t time.Time, period time.Duration) uint64 {
	sec := t.Unix()
	if sec < 0 {
		return 0
	}
	return uint64(sec) / uint64(period/time.Second)
}

// HOTP is the RFC 4226 value of key at counter, digits long (6..8).
func HOTP(key []byte, counter uint64, digits int, alg Algorithm) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	m := hmac.New(alg.hash(), key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	bin := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	mod := uint32(1)
	for range digits {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", digits, bin%mod)
}

// Code is the TOTP value of key at t with the defaults.
func Code(key []byte, t time.Time) string {
	return HOTP(key, Counter(t, DefaultPeriod), DefaultDigits, SHA1)
}

// Verify checks code against key at now (± Skew periods) with the
// defaults. It returns the counter that matched; a counter at or below
// lastCounter is refused (a code is good once). Comparisons run in
// constant time.
func Verify(key []byte, code string, now time.Time, lastCounter uint64) (uint64, bool) {
	code = strings.TrimSpace(code)
	if len(code) != DefaultDigits {
		return 0, false
	}
	c := Counter(now, DefaultPeriod)
	var matched uint64
	ok := false
	for d := -Skew; d <= Skew; d++ {
		if d < 0 && c < uint64(-d) {
			continue
		}
		n := uint64(int64(c) + int64(d))
		if hmac.Equal([]byte(HOTP(key, n, DefaultDigits, SHA1)), []byte(code)) && n > lastCounter {
			matched, ok = n, true
		}
	}
	return matched, ok
}

// URI is the otpauth:// URI (Key Uri Format) for secret, labelled
// "issuer:account", with the default algorithm, digits and period.
func URI(issuer, account, secret string) string {
	q := url.Values{}
	q.Set("secret", secret)
	q.Set("issuer", issuer)
	q.Set("algorithm", string(SHA1))
	q.Set("digits", strconv.Itoa(DefaultDigits))
	q.Set("period", strconv.Itoa(int(DefaultPeriod/time.Second)))
	label := url.PathEscape(issuer) + ":" + url.PathEscape(account)
	return "otpauth://totp/" + label + "?" + q.Encode()
}
