package fence

import (
	"encoding/hex"

	"github.com/ql3/ql3/core/errs"
)

// ParseUUID parses the canonical text form of a UUID (lowercase hex,
// 8-4-4-4-12) as used for claim tokens and offer ids. Uppercase, braces,
// URNs and the nil UUID are refused so that one value has one spelling and
// string comparison of stored ids is exact. field names the input in the
// returned error.
func ParseUUID(field, s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, errs.Invalidf(field, "must be a UUID in canonical 8-4-4-4-12 lowercase form")
	}
	j, hi, high := 0, byte(0), true
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue // hyphens, checked above
		}
		v, ok := lowerHex(s[i])
		if !ok {
			return [16]byte{}, errs.Invalidf(field, "must be a UUID in canonical 8-4-4-4-12 lowercase form")
		}
		if high {
			hi, high = v, false
			continue
		}
		u[j] = hi<<4 | v
		j, high = j+1, true
	}
	if u == ([16]byte{}) {
		return u, errs.Invalidf(field, "must not be the nil UUID")
	}
	return u, nil
}

// FormatUUID renders u in canonical lowercase form.
func FormatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
