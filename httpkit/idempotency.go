package httpkit

import "github.com/ql3/ql3/core/errs"

// MaxIdempotencyKey bounds a client idempotency key of a manual run, on
// both APIs.
const MaxIdempotencyKey = 128

// IdempotencyKey picks a manual run's client key from the Idempotency-Key
// header or the body's idempotencyKey; both present must agree. The key is
// printable ASCII without spaces, at most MaxIdempotencyKey bytes; "" when
// neither carries one (the caller decides whether that is allowed).
func IdempotencyKey(header, body string) (string, error) {
	field, key := "Idempotency-Key", header
	switch {
	case header != "" && body != "" && header != body:
		return "", errs.Invalidf("idempotencyKey", "differs from the Idempotency-Key header")
	case header == "":
		field, key = "idempotencyKey", body
	}
	if len(key) > MaxIdempotencyKey {
		return "", errs.Invalidf(field, "must be at most %d bytes, got %d", MaxIdempotencyKey, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "", errs.Invalidf(field, "must be printable ASCII without spaces")
		}
	}
	return key, nil
}
