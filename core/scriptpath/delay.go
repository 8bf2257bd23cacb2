package scriptpath

import (
	"crypto/sha256"
	"encoding/binary"
)

// MaxRandomDelayMs bounds randomDelayMs (QingLong's RandomDelay, seconds
// there): one hour.
const MaxRandomDelayMs = 3600_000

// RandomDelayMs is the start delay of one occurrence in [0, maxMs): a
// function of the occurrence's key (the Run's idempotency key), so every
// replica, a replay and the Run's page compute the same delay, and
// different occurrences spread out as QingLong's random sleep does.
func RandomDelayMs(occurrenceKey string, maxMs int64) int64 {
	if maxMs <= 0 {
		return 0
	}
	sum := sha256.Sum256([]byte("ql3:random-delay:v1:" + occurrenceKey))
	return int64(binary.BigEndian.Uint64(sum[:8]) % uint64(maxMs))
}
