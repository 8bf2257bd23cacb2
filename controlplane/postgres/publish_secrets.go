package postgres

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/errs"
)

// Bearer secrets (DESIGN.md §8). Both kinds are "<prefix><id>_<secret>"
// with a 256-bit secret in lower-case hex; the server stores only the
// SHA-256 of the whole text, so the id is bound into the digest and a
// database dump reveals no usable credential. The id lets the server find
// the row without scanning, and lets an operator tell credentials apart.
//
//	admin API token:   ql3c_<16 hex>_<64 hex>
//	worker credential: ql3w_<credential UUID>_<64 hex>
const (
	APITokenPrefix         = "ql3c_"
	WorkerCredentialPrefix = "ql3w_"

	apiTokenIDBytes = 8
	secretBytes     = 32
	// MaxSecretText bounds what a parser reads (the credential file limit).
	MaxSecretText = 256
)

// SecretDigest is the SHA-256 of a token's or credential's full text.
type SecretDigest [sha256.Size]byte

func digestText(s string) SecretDigest { return sha256.Sum256([]byte(s)) }

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", errs.E(errs.Internal, "", "read random bytes: %v", err)
	}
	return hex.EncodeToString(b), nil
}

func isLowerHexSecret(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// NewAPIToken returns a fresh token, its id and its digest.
func NewAPIToken() (token, id string, digest SecretDigest, err error) {
	if id, err = randomHex(apiTokenIDBytes); err != nil {
		return "", "", digest, err
	}
	secret, err := randomHex(secretBytes)
	if err != nil {
		return "", "", digest, err
	}
	token = APITokenPrefix + id + "_" + secret
	return token, id, digestText(token), nil
}

// ParseAPIToken checks the shape of an admin API token and returns its id
// and digest. The error never echoes the input.
func ParseAPIToken(s string) (id string, digest SecretDigest, err error) {
	bad := errs.E(errs.Unauthorized, "Authorization", "malformed API token (want ql3c_<id>_<secret>)")
	if len(s) > MaxSecretText {
		return "", digest, bad
	}
	rest, ok := strings.CutPrefix(s, APITokenPrefix)
	if !ok {
		return "", digest, bad
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 2*apiTokenIDBytes || len(secret) != 2*secretBytes || !isLowerHexSecret(id) || !isLowerHexSecret(secret) {
		return "", digest, bad
	}
	return id, digestText(s), nil
}

// NewWorkerCredential returns a fresh credential for credentialID and its
// digest.
func NewWorkerCredential(credentialID uuid.UUID) (string, SecretDigest, error) {
	secret, err := randomHex(secretBytes)
	if err != nil {
		return "", SecretDigest{}, err
	}
	text := WorkerCredentialPrefix + credentialID.String() + "_" + secret
	return text, digestText(text), nil
}

// ParseWorkerCredential checks the shape of a worker credential and returns
// its credential id (canonical UUID text) and digest; worker ingress
// compares the digest with worker_credentials.secret_digest. The error
// never echoes the input.
func ParseWorkerCredential(s string) (credentialID string, digest SecretDigest, err error) {
	bad := errs.E(errs.Unauthorized, "credential", "malformed worker credential (want ql3w_<id>_<secret>)")
	if len(s) > MaxSecretText {
		return "", digest, bad
	}
	rest, ok := strings.CutPrefix(s, WorkerCredentialPrefix)
	if !ok {
		return "", digest, bad
	}
	idText, secret, ok := strings.Cut(rest, "_")
	if !ok || len(idText) != 36 || len(secret) != 2*secretBytes || !isLowerHexSecret(secret) {
		return "", digest, bad
	}
	id, err := uuid.Parse(idText)
	if err != nil || id.String() != idText || id == uuid.Nil {
		return "", digest, bad
	}
	return idText, digestText(s), nil
}
