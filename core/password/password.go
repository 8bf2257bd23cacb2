// Package password hashes and checks the passwords of ql3 accounts with
// argon2id (RFC 9106, golang.org/x/crypto/argon2) and checks usernames.
// Both binaries use it: one encoding, one parameter set, one verifier.
//
// The parameters are OWASP's minimum for a memory-constrained host,
// 19 MiB, 2 passes, 1 lane, a 16-byte salt and a 32-byte key, stored in
// the PHC string format $argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>
// (unpadded base64). They live in each hash, so raising them later keeps
// old hashes verifiable. A hash takes 19 MiB: callers bound how many run
// at once.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"regexp"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/ql3/ql3/core/errs"
)

// Parameters of new hashes.
const (
	MemoryKiB = 19 * 1024
	Time      = 2
	Threads   = 1
	SaltLen   = 16
	KeyLen    = 32

	MinLen = 8   // characters
	MaxLen = 256 // bytes
)

var b64 = base64.RawStdEncoding

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// CheckUsername checks an account name: 1..64 of A-Z a-z 0-9 . _ @ -,
// starting with a letter or digit.
func CheckUsername(u string) error {
	if !usernameRE.MatchString(u) {
		return errs.Invalidf("username", "1..64 of A-Z a-z 0-9 . _ @ -, starting with a letter or digit")
	}
	return nil
}

// Check checks a new password's length.
func Check(p string) error {
	if n := len([]rune(p)); n < MinLen || len(p) > MaxLen {
		return errs.Invalidf("password", "must be %d..%d characters", MinLen, MaxLen)
	}
	return nil
}

// Hash returns the PHC string of password under a fresh salt.
func Hash(password string) (string, error) { return HashWith(rand.Reader, password) }

// HashWith is Hash with the salt read from salts.
func HashWith(salts io.Reader, password string) (string, error) {
	if err := Check(password); err != nil {
		return "", err
	}
	salt := make([]byte, SaltLen)
	if _, err := io.ReadFull(salts, salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, Time, MemoryKiB, Threads, KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, MemoryKiB, Time, Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether password matches the PHC string hash. A
// malformed hash, or parameters beyond four times what this package
// writes, never match.
func Verify(hash, password string) bool {
	if len(password) > MaxLen {
		return false
	}
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil ||
		m == 0 || m > 4*MemoryKiB || t == 0 || t > 4*Time || p == 0 || p > 4 {
		return false
	}
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}
