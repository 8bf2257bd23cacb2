package fence

import "crypto/subtle"

// ClaimFence is the claim a scheduler replica holds on one trigger schedule
// row (DESIGN.md §2 "Schedule"): claim_owner, claim_token (a UUID),
// claim_version and claim_expires_at_ms, exactly as the claim statement
// wrote and returned them.
type ClaimFence struct {
	Owner       string
	Token       [16]byte
	Version     int64
	ExpiresAtMs int64
}

// Holds reports whether the claim f (what the caller was granted) still
// holds against observed (what the row shows now) at the authority time
// dbNowMs. It returns nil or a *DriftError naming the first part that
// drifted: unset, owner, token, version, expiry, expired.
func (f ClaimFence) Holds(observed ClaimFence, dbNowMs int64) error {
	if f.Owner == "" || f.Token == ([16]byte{}) {
		return drift("claim", ReasonUnset)
	}
	if observed.Owner != f.Owner {
		return drift("claim", ReasonOwner)
	}
	if subtle.ConstantTimeCompare(observed.Token[:], f.Token[:]) != 1 {
		return drift("claim", ReasonToken)
	}
	if observed.Version != f.Version {
		return drift("claim", ReasonVersion)
	}
	if observed.ExpiresAtMs != f.ExpiresAtMs {
		return drift("claim", ReasonExpiry)
	}
	if Expired(observed.ExpiresAtMs, dbNowMs) {
		return drift("claim", ReasonExpired)
	}
	return nil
}
