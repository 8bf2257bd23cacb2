package fence

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"io"
	"log/slog"

	"github.com/ql3/ql3/core/errs"
)

// LeaseFence binds a RunLease, the only execution authority (DESIGN.md §2):
// the Run and Attempt, the worker and its session/generation, the lease's
// generation, version and expiry, the worker's offer id and the SHA-256 of
// the worker's lease token. The plaintext token never appears here.
type LeaseFence struct {
	RunID             string
	AttemptID         string
	WorkerID          string
	SessionID         string
	SessionGeneration int64
	LeaseGeneration   int64
	LeaseVersion      int64
	ExpiresAtMs       int64
	TokenDigest       [sha256.Size]byte
	OfferID           string
}

// Holds reports whether the lease f (what the caller expects: the values
// the claim returned, with the digest of the token presented now) still
// holds against observed (the durable lease) at the authority time dbNowMs.
// It returns nil or a *DriftError naming the first part that drifted, in
// the order unset, run, attempt, worker, session, session_generation,
// offer, token, lease_generation, version, expiry, expired. The token
// digests are compared in constant time.
func (f LeaseFence) Holds(observed LeaseFence, dbNowMs int64) error {
	if f.RunID == "" || f.AttemptID == "" || f.WorkerID == "" || f.SessionID == "" ||
		f.OfferID == "" || f.TokenDigest == ([sha256.Size]byte{}) {
		return drift("lease", ReasonUnset)
	}
	switch {
	case observed.RunID != f.RunID:
		return drift("lease", ReasonRun)
	case observed.AttemptID != f.AttemptID:
		return drift("lease", ReasonAttempt)
	case observed.WorkerID != f.WorkerID:
		return drift("lease", ReasonWorker)
	case observed.SessionID != f.SessionID:
		return drift("lease", ReasonSession)
	case observed.SessionGeneration != f.SessionGeneration:
		return drift("lease", ReasonSessionGeneration)
	case observed.OfferID != f.OfferID:
		return drift("lease", ReasonOffer)
	case subtle.ConstantTimeCompare(observed.TokenDigest[:], f.TokenDigest[:]) != 1:
		return drift("lease", ReasonToken)
	case observed.LeaseGeneration != f.LeaseGeneration:
		return drift("lease", ReasonLeaseGeneration)
	case observed.LeaseVersion != f.LeaseVersion:
		return drift("lease", ReasonVersion)
	case observed.ExpiresAtMs != f.ExpiresAtMs:
		return drift("lease", ReasonExpiry)
	case Expired(observed.ExpiresAtMs, dbNowMs):
		return drift("lease", ReasonExpired)
	}
	return nil
}

// Lease token sizes. A token carries at least 256 bits of entropy: 32..64
// random bytes, sent as unpadded base64url (43..86 characters).
const (
	LeaseTokenBytes    = 32
	MaxLeaseTokenBytes = 64
	MinLeaseTokenLen   = 43
	MaxLeaseTokenLen   = 86
)

// leaseTokenDomain separates lease-token digests from every other SHA-256
// ql3 computes.
const leaseTokenDomain = "ql3/lease-token/v1"

var tokenEncoding = base64.RawURLEncoding.Strict()

// LeaseToken is a worker's bearer capability for one offer, in its wire
// form. It redacts itself in fmt and slog output; string(t) is the only way
// to the plaintext.
type LeaseToken string

// String redacts the token.
func (LeaseToken) String() string { return "[redacted]" }

// GoString redacts the token in %#v.
func (LeaseToken) GoString() string { return `fence.LeaseToken("[redacted]")` }

// LogValue redacts the token in log/slog output, JSON handlers included.
func (LeaseToken) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Validate checks the token format: unpadded base64url of 32..64 bytes in
// canonical form (exactly one string per token, so its digest is
// unambiguous). A token whose bytes are all equal is refused as an obvious
// non-random value; entropy beyond that cannot be verified.
func (t LeaseToken) Validate() error {
	s := string(t)
	if len(s) < MinLeaseTokenLen || len(s) > MaxLeaseTokenLen {
		return errs.Invalidf("leaseToken", "must be %d..%d base64url characters (%d..%d random bytes), got %d characters",
			MinLeaseTokenLen, MaxLeaseTokenLen, LeaseTokenBytes, MaxLeaseTokenBytes, len(s))
	}
	// The decoder skips \r and \n; refuse anything outside the alphabet
	// first so one token has exactly one spelling.
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return errs.Invalidf("leaseToken", "must be unpadded canonical base64url")
		}
	}
	raw, err := tokenEncoding.DecodeString(s)
	if err != nil {
		return errs.Invalidf("leaseToken", "must be unpadded canonical base64url")
	}
	if len(raw) < LeaseTokenBytes {
		return errs.Invalidf("leaseToken", "must carry at least %d random bytes", LeaseTokenBytes)
	}
	same := true
	for _, b := range raw[1:] {
		if b != raw[0] {
			same = false
			break
		}
	}
	if same {
		return errs.Invalidf("leaseToken", "is not random")
	}
	return nil
}

// Digest returns DigestLeaseToken of the token's wire form.
func (t LeaseToken) Digest() [sha256.Size]byte {
	return DigestLeaseToken([]byte(t))
}

// DigestLeaseToken returns sha256("ql3/lease-token/v1" || 0x00 || token),
// where token is the wire form (the base64url text the worker sends). Only
// this digest is stored; the plaintext never is.
func DigestLeaseToken(token []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(leaseTokenDomain))
	h.Write([]byte{0})
	h.Write(token)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// NewLeaseToken reads LeaseTokenBytes from random (crypto/rand.Reader in
// production) and returns the token's wire form.
func NewLeaseToken(random io.Reader) (LeaseToken, error) {
	var raw [LeaseTokenBytes]byte
	if _, err := io.ReadFull(random, raw[:]); err != nil {
		return "", errs.E(errs.Internal, "", "read random lease token: %v", err)
	}
	t := LeaseToken(tokenEncoding.EncodeToString(raw[:]))
	if err := t.Validate(); err != nil {
		return "", errs.E(errs.Internal, "", "random source produced an unusable lease token")
	}
	return t, nil
}
