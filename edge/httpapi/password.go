package httpapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/ql3/ql3/core/errs"
)

// Password hashing: argon2id (RFC 9106) with OWASP's minimum for a
// memory-constrained host, 19 MiB, 2 passes, 1 lane, a 16-byte salt and a
// 32-byte key, stored in the PHC string format
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<key> (unpadded base64). The
// parameters live in each hash, so raising them later keeps old hashes
// verifiable. Hashing is bounded to two at a time (signinMu): a flood of
// sign-ins cannot take more than 38 MiB.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonSaltLen   = 16
	argonKeyLen    = 32

	minPasswordLen = 8
	maxPasswordLen = 256
)

var b64 = base64.RawStdEncoding

// HashPassword returns the PHC string of password under a fresh salt.
func HashPassword(password string) (string, error) {
	if err := checkPassword(password); err != nil {
		return "", err
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

func checkPassword(p string) error {
	if n := len([]rune(p)); n < minPasswordLen || len(p) > maxPasswordLen {
		return errs.Invalidf("password", "must be %d..%d characters", minPasswordLen, maxPasswordLen)
	}
	return nil
}

// VerifyPassword reports whether password matches the PHC string hash.
// A malformed hash, or parameters beyond what this server would ever
// write times four, never match.
func VerifyPassword(hash, password string) bool {
	if len(password) > maxPasswordLen {
		return false
	}
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil ||
		m == 0 || m > 4*argonMemoryKiB || t == 0 || t > 4*argonTime || p == 0 || p > 4 {
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
