package deps

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

func sha256Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func itoa(n int) string { return strconv.Itoa(n) }
