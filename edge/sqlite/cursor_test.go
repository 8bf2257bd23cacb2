package sqlite

import (
	"encoding/base64"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []cursor{
		{AtMs: 0, ID: "01890a5d-ac96-774b-bcce-b302099a8057"},
		{AtMs: 1772366400000, ID: "01890a5d-ac96-774b-bcce-b302099a8057"},
		{AtMs: 1<<63 - 1, ID: "00000000-0000-0000-0000-000000000000"},
	} {
		got, err := decodeCursor(encodeCursor(c))
		if err != nil || got != c {
			t.Fatalf("round trip %+v: %+v, %v", c, got, err)
		}
	}
}

func TestCursorRejects(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, in := range map[string]string{
		"not base64":       "!!!",
		"padded base64":    base64.URLEncoding.EncodeToString([]byte("v1:1:01890a5d-ac96-774b-bcce-b302099a8057")),
		"no version":       enc("1:01890a5d-ac96-774b-bcce-b302099a8057"),
		"other version":    enc("v2:1:01890a5d-ac96-774b-bcce-b302099a8057"),
		"no id":            enc("v1:1"),
		"negative time":    enc("v1:-1:01890a5d-ac96-774b-bcce-b302099a8057"),
		"leading zero":     enc("v1:01:01890a5d-ac96-774b-bcce-b302099a8057"),
		"plus sign":        enc("v1:+1:01890a5d-ac96-774b-bcce-b302099a8057"),
		"bad uuid":         enc("v1:1:not-a-uuid"),
		"uppercase uuid":   enc("v1:1:01890A5D-AC96-774B-BCCE-B302099A8057"),
		"braced uuid":      enc("v1:1:{01890a5d-ac96-774b-bcce-b302099a8057}"),
		"overflowing time": enc("v1:9223372036854775808:01890a5d-ac96-774b-bcce-b302099a8057"),
		"too long":         enc(string(make([]byte, 200))),
	} {
		if _, err := decodeCursor(in); errs.Code(err) != errs.Invalid || errs.Field(err) != "cursor" {
			t.Errorf("%s: err = %v, want invalid cursor", name, err)
		}
	}
}

// FuzzDecodeCursor: decodeCursor never panics, accepts only what
// encodeCursor produces, and what it accepts re-encodes to the same string.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursor{AtMs: 1772366400000, ID: "01890a5d-ac96-774b-bcce-b302099a8057"}))
	f.Add("")
	f.Add("djE6MTox")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			if errs.Field(err) != "cursor" {
				t.Fatalf("error without the cursor field: %v", err)
			}
			return
		}
		if again := encodeCursor(c); again != s {
			t.Fatalf("accepted %q, which re-encodes as %q", s, again)
		}
	})
}
