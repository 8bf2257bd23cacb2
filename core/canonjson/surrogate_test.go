package canonjson

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// ADR 0003 promises no silent U+FFFD: encoding/json decodes an unpaired
// surrogate escape to U+FFFD, so "\ud800", "\udfff" and "\ufffd" would be
// three spellings of one value (and one digest). The strict front door
// refuses the first two and names the member (issue #13 item 5).
func TestValidateRefusesUnpairedSurrogates(t *testing.T) {
	lim := Limits{MaxDepth: 3, MaxEntries: 8, MaxString: 64}
	for _, c := range []struct {
		doc, field string
	}{
		{`{"a":"\ud800"}`, "a"},
		{`{"a":"\udfff"}`, "a"},
		{`{"a":"x\uDBFFy"}`, "a"},
		{`{"a":"\ud800\u0041"}`, "a"},
		{`{"a":"\udc00\ud800"}`, "a"},
		{`{"a":"\ud800\ud800"}`, "a"},
		{`{"a":["ok","\ud83d"]}`, "a[1]"},
		{`{"a":{"b":"\ude00"}}`, "a.b"},
		{`{"k\ud800":1}`, "k\ufffd"},
	} {
		err := Validate([]byte(c.doc), lim)
		if errs.Code(err) != errs.Invalid || errs.Field(err) != c.field {
			t.Errorf("Validate(%s) = %v (field %q), want invalid on %q", c.doc, err, errs.Field(err), c.field)
		}
		var v map[string]any
		if err := DecodeStrict([]byte(c.doc), lim, &v); errs.Code(err) != errs.Invalid {
			t.Errorf("DecodeStrict(%s) = %v, want invalid", c.doc, err)
		}
	}
	for _, doc := range []string{
		`{"a":"\ud83d\ude00"}`, // a pair is one character
		`{"a":"\uD83D\uDE00"}`,
		`{"a":"\ufffd"}`,  // U+FFFD itself is a character
		`{"a":"\\ud800"}`, // an escaped backslash, then text
		`{"a":"\\\ud83d\ude00"}`,
		`{"a":"😀"}`,
	} {
		if err := Validate([]byte(doc), lim); err != nil {
			t.Errorf("Validate(%s) = %v, want accepted", doc, err)
		}
	}
}
