package schedule

import (
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// MaxTriggerIDBytes bounds a trigger ID (a UUID is 36).
const MaxTriggerIDBytes = 128

const keyPrefix = "ql3:cron:v1:"

// IdempotencyKey is the unique key of the Run for one cron occurrence:
// "ql3:cron:v1:<triggerId>:<triggerRevision>:<scheduledForMs>". Every
// replica derives the same key for the same occurrence, so the database's
// unique constraint admits it once.
func IdempotencyKey(triggerID string, triggerRevision int64, scheduledForMs int64) string {
	var buf [len(keyPrefix) + MaxTriggerIDBytes + 42]byte // on the stack for valid IDs
	b := append(buf[:0], keyPrefix...)
	b = append(b, triggerID...)
	b = append(b, ':')
	b = strconv.AppendInt(b, triggerRevision, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, scheduledForMs, 10)
	return string(b)
}

// ParseIdempotencyKey is the strict inverse of IdempotencyKey: it accepts
// only keys IdempotencyKey produces for a valid trigger ID and a
// non-negative revision (canonical decimals: no sign on the revision, no
// leading zeros, no "+", no "-0").
func ParseIdempotencyKey(key string) (triggerID string, triggerRevision int64, scheduledForMs int64, err error) {
	const field = "idempotencyKey"
	if len(key) > len(keyPrefix)+MaxTriggerIDBytes+1+19+1+20 {
		return "", 0, 0, errs.Invalidf(field, "is %d bytes, too long for a cron key", len(key))
	}
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", 0, 0, errs.Invalidf(field, "must start with %q", keyPrefix)
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 {
		return "", 0, 0, errs.Invalidf(field, "must be %s<triggerId>:<triggerRevision>:<scheduledForMs>", keyPrefix)
	}
	if !validTriggerID(parts[0]) {
		return "", 0, 0, errs.Invalidf(field, "trigger ID %q is not 1..%d characters of [A-Za-z0-9._-]", parts[0], MaxTriggerIDBytes)
	}
	rev, ok := canonicalInt(parts[1])
	if !ok || rev < 0 {
		return "", 0, 0, errs.Invalidf(field, "trigger revision %q is not a canonical non-negative integer", parts[1])
	}
	ms, ok := canonicalInt(parts[2])
	if !ok {
		return "", 0, 0, errs.Invalidf(field, "scheduled time %q is not a canonical integer", parts[2])
	}
	return parts[0], rev, ms, nil
}

func canonicalInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && strconv.FormatInt(v, 10) == s
}

func validTriggerID(id string) bool {
	if id == "" || len(id) > MaxTriggerIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
