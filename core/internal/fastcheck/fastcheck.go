// Package fastcheck holds a fast decoder to its reference decoder, for the
// tests of the packages that have both (core/spec, core/protocol; ADR 0025).
package fastcheck

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// Check holds fast to ref for one input: what the fast path accepts the
// reference accepts with an equal value; a fast-path refusal is either
// canonjson.ErrNotFast (the caller falls back to the reference) or a
// reference refusal with the same code and field; and the encoding (encode)
// of anything the reference accepts takes the fast path to the same value.
// It reports whether the fast path accepted data.
func Check[T any](t testing.TB, data []byte, fast, ref func([]byte) (T, error), encode func(T) ([]byte, error)) bool {
	t.Helper()
	f, fastErr := fast(data)
	r, refErr := ref(data)
	switch {
	case fastErr == nil && refErr != nil:
		t.Fatalf("fast path accepts %q, reference refuses: %v", data, refErr)
	case fastErr == nil && !reflect.DeepEqual(f, r):
		t.Fatalf("fast path and reference disagree on %q:\n fast %#v\n ref  %#v", data, f, r)
	case fastErr != nil && !errors.Is(fastErr, canonjson.ErrNotFast):
		if refErr == nil || errs.Code(fastErr) != errs.Code(refErr) || errs.Field(fastErr) != errs.Field(refErr) {
			t.Fatalf("fast path refuses %q with %v, reference: %v", data, fastErr, refErr)
		}
	}
	if refErr == nil {
		raw, err := encode(r)
		if err != nil {
			t.Fatalf("accepted %q does not encode: %v", data, err)
		}
		if again, err := fast(raw); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("encoding %s of an accepted value leaves the fast path: %v", raw, err)
		}
	}
	return fastErr == nil
}
