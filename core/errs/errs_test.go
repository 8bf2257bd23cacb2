package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeAndField(t *testing.T) {
	wrapped := fmt.Errorf("publishing: %w", Invalidf("retry.maxAttempts", "must be 1..16, got %d", 17))
	cases := []struct {
		err       error
		code      string
		field     string
		errString string
	}{
		{nil, "", "", ""},
		{errors.New("boom"), Internal, "", "boom"},
		{wrapped, Invalid, "retry.maxAttempts", "publishing: retry.maxAttempts: must be 1..16, got 17"},
		{TooLargef("", "body is %d bytes, limit is %d", 70000, 65536), TooLarge, "", "body is 70000 bytes, limit is 65536"},
		{Conflictf("revision %d is not current", 3), Conflict, "", "revision 3 is not current"},
		{NotFoundf("task %q", "x"), NotFound, "", `task "x"`},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.code {
			t.Errorf("Code(%v) = %q, want %q", c.err, got, c.code)
		}
		if got := Field(c.err); got != c.field {
			t.Errorf("Field(%v) = %q, want %q", c.err, got, c.field)
		}
		if c.err != nil && c.err.Error() != c.errString {
			t.Errorf("Error() = %q, want %q", c.err.Error(), c.errString)
		}
	}
}

func TestPrefix(t *testing.T) {
	cases := []struct {
		parent, field, want string
	}{
		{"spec", "", "spec"},
		{"spec", "retry.maxAttempts", "spec.retry.maxAttempts"},
		{"spec.argv.args", "[3]", "spec.argv.args[3]"},
		{"", "x", "x"},
	}
	for _, c := range cases {
		orig := Invalidf(c.field, "bad")
		got := Prefix(c.parent, orig)
		if Field(got) != c.want {
			t.Errorf("Prefix(%q, %q) field = %q, want %q", c.parent, c.field, Field(got), c.want)
		}
		if orig.Field != c.field {
			t.Errorf("Prefix mutated the original error: %q", orig.Field)
		}
	}
	plain := errors.New("plain")
	if Prefix("x", plain) != plain {
		t.Error("Prefix must return non-coded errors unchanged")
	}
}
