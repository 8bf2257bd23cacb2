package canonjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

var testLimits = Limits{MaxBytes: 256, MaxDepth: 3, MaxEntries: 4, MaxString: 8}

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		lim       Limits
		wantCode  string // "" = accepted
		wantField string
		wantMsg   string // substring of the message
	}{
		{name: "flat object", doc: `{"a":1,"b":"x"}`, lim: testLimits},
		{name: "scalar top level", doc: `"abc"`, lim: testLimits},
		{name: "surrounding whitespace", doc: " \n{\"a\":[1,2]}\t", lim: testLimits},
		{name: "depth at limit", doc: `{"a":{"b":[1]}}`, lim: testLimits},
		{name: "depth over limit", doc: `{"a":{"b":[[1]]}}`, lim: testLimits,
			wantCode: errs.Invalid, wantField: "a.b[0]", wantMsg: "limit of 3"},
		{name: "zero depth means flat", doc: `{"a":{}}`, lim: Limits{},
			wantCode: errs.Invalid, wantField: "a", wantMsg: "limit of 1"},
		{name: "object entries at limit", doc: `{"a":1,"b":2,"c":3,"d":4}`, lim: testLimits},
		{name: "object entries over limit", doc: `{"x":{"a":1,"b":2,"c":3,"d":4,"e":5}}`, lim: testLimits,
			wantCode: errs.TooLarge, wantField: "x", wantMsg: "more than 4 entries"},
		{name: "array elements over limit", doc: `{"x":[1,2,3,4,5]}`, lim: testLimits,
			wantCode: errs.TooLarge, wantField: "x", wantMsg: "more than 4 elements"},
		{name: "string at limit", doc: `{"a":"12345678"}`, lim: testLimits},
		{name: "string over limit", doc: `{"a":"123456789"}`, lim: testLimits,
			wantCode: errs.TooLarge, wantField: "a", wantMsg: "limit is 8"},
		{name: "escaped string counted decoded", doc: `{"a":"\u0041\u0042\u0043"}`, lim: testLimits},
		{name: "string in array names index", doc: `{"a":["x","123456789"]}`, lim: testLimits,
			wantCode: errs.TooLarge, wantField: "a[1]"},
		{name: "key over limit", doc: `{"123456789":1}`, lim: testLimits,
			wantCode: errs.TooLarge, wantField: "123456789", wantMsg: "key is 9 bytes"},
		{name: "document over limit", doc: `{"a":"` + strings.Repeat("x", 300) + `"}`, lim: testLimits,
			wantCode: errs.TooLarge, wantMsg: "limit is 256"},
		{name: "duplicate key", doc: `{"a":1,"a":2}`, lim: testLimits,
			wantCode: errs.Invalid, wantField: "a", wantMsg: "duplicate"},
		{name: "case-folded duplicate key", doc: `{"file":"x","File":"y"}`, lim: testLimits,
			wantCode: errs.Invalid, wantField: "File", wantMsg: "duplicate"},
		{name: "nested duplicate key", doc: `{"a":{"k":1,"K":2}}`, lim: testLimits,
			wantCode: errs.Invalid, wantField: "a.K", wantMsg: "duplicate"},
		{name: "same key in sibling objects", doc: `{"a":{"k":1},"b":{"k":2}}`, lim: testLimits},
		{name: "bad UTF-8", doc: "{\"a\":\"\xff\"}", lim: testLimits,
			wantCode: errs.Invalid, wantMsg: "UTF-8"},
		{name: "trailing value", doc: `{"a":1}{}`, lim: testLimits,
			wantCode: errs.Invalid, wantMsg: "after the JSON value"},
		{name: "trailing garbage", doc: `{"a":1} x`, lim: testLimits,
			wantCode: errs.Invalid, wantMsg: "after the JSON value"},
		{name: "truncated", doc: `{"a":`, lim: testLimits,
			wantCode: errs.Invalid, wantField: "a", wantMsg: "end of JSON"},
		{name: "empty", doc: ``, lim: testLimits,
			wantCode: errs.Invalid, wantMsg: "end of JSON"},
		{name: "malformed", doc: `{"a" 1}`, lim: testLimits,
			wantCode: errs.Invalid, wantField: "a", wantMsg: "malformed"},
		{name: "unlimited", doc: `{"a":"` + strings.Repeat("x", 300) + `"}`, lim: Limits{MaxDepth: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate([]byte(tt.doc), tt.lim)
			checkErr(t, err, tt.wantCode, tt.wantField, tt.wantMsg)
		})
	}
}

func checkErr(t *testing.T, err error, code, field, msg string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want %s error", code)
	}
	if got := errs.Code(err); got != code {
		t.Errorf("code = %q, want %q (%v)", got, code, err)
	}
	if got := errs.Field(err); got != field {
		t.Errorf("field = %q, want %q (%v)", got, field, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not mention %q", err, msg)
	}
}

type inner struct {
	Count int      `json:"count"`
	Tags  []string `json:"tags,omitempty"`
}

type Embedded struct {
	Promoted string `json:"promoted"`
}

type target struct {
	Embedded
	Name    string           `json:"name"`
	Inner   inner            `json:"inner"`
	Ptr     *inner           `json:"ptr,omitempty"`
	List    []inner          `json:"list,omitempty"`
	Env     map[string]inner `json:"env,omitempty"`
	Digest  Digest           `json:"digest,omitzero"`
	Ignored string           `json:"-"`
	Bare    int
}

func TestDecodeStrict(t *testing.T) {
	lim := Limits{MaxBytes: 1024, MaxDepth: 4, MaxEntries: 16, MaxString: 128}
	tests := []struct {
		name      string
		doc       string
		wantCode  string
		wantField string
		wantMsg   string
	}{
		{name: "valid", doc: `{"name":"n","inner":{"count":2,"tags":["a"]},"promoted":"p","Bare":1}`},
		{name: "digest via text unmarshaler", doc: `{"digest":"sha256:` + strings.Repeat("ab", 32) + `"}`},
		{name: "map keys are free", doc: `{"env":{"Any Key":{"count":1}}}`},
		{name: "top level array", doc: `[]`, wantCode: errs.Invalid, wantMsg: "expected a JSON object"},
		{name: "top level string", doc: `"x"`, wantCode: errs.Invalid, wantMsg: "expected a JSON object"},
		{name: "empty input", doc: `  `, wantCode: errs.Invalid, wantMsg: "expected a JSON object"},
		{name: "unknown field", doc: `{"name":"n","nope":1}`,
			wantCode: errs.Invalid, wantField: "nope", wantMsg: "unknown field"},
		{name: "unknown nested field names path", doc: `{"inner":{"count":1,"extra":true}}`,
			wantCode: errs.Invalid, wantField: "inner.extra", wantMsg: "unknown field"},
		{name: "unknown field in array element", doc: `{"list":[{"count":1},{"x":1}]}`,
			wantCode: errs.Invalid, wantField: "list[1].x", wantMsg: "unknown field"},
		{name: "unknown field in map value", doc: `{"env":{"K":{"bad":1}}}`,
			wantCode: errs.Invalid, wantField: "env.K.bad", wantMsg: "unknown field"},
		{name: "wrong case field is unknown", doc: `{"Name":"n"}`,
			wantCode: errs.Invalid, wantField: "Name", wantMsg: "unknown field"},
		{name: "unicode folded field is unknown", doc: `{"ptr":{"ſount":1}}`,
			wantCode: errs.Invalid, wantField: "ptr.ſount", wantMsg: "unknown field"},
		{name: "ignored field is unknown", doc: `{"Ignored":"x"}`,
			wantCode: errs.Invalid, wantField: "Ignored", wantMsg: "unknown field"},
		{name: "type error names field", doc: `{"inner":{"count":"two"}}`,
			wantCode: errs.Invalid, wantField: "inner.count", wantMsg: "expected int"},
		{name: "type error top level field", doc: `{"name":5}`,
			wantCode: errs.Invalid, wantField: "name", wantMsg: "expected string"},
		{name: "bad digest", doc: `{"digest":"md5:00"}`,
			wantCode: errs.Invalid, wantMsg: "sha256"},
		{name: "duplicate key", doc: `{"name":"a","name":"b"}`,
			wantCode: errs.Invalid, wantField: "name", wantMsg: "duplicate"},
		{name: "case-folded duplicate", doc: `{"name":"a","NAME":"b"}`,
			wantCode: errs.Invalid, wantField: "NAME", wantMsg: "duplicate"},
		{name: "trailing data", doc: `{"name":"a"} {}`,
			wantCode: errs.Invalid, wantMsg: "after the JSON value"},
		{name: "bad UTF-8", doc: "{\"name\":\"\xc3\x28\"}",
			wantCode: errs.Invalid, wantMsg: "UTF-8"},
		{name: "too deep", doc: `{"list":[{"tags":[["x"]]}]}`,
			wantCode: errs.Invalid, wantField: "list[0].tags[0]", wantMsg: "limit of 4"},
		{name: "too large non-object", doc: strings.Repeat(" ", 2000),
			wantCode: errs.TooLarge, wantMsg: "limit is 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v target
			err := DecodeStrict([]byte(tt.doc), lim, &v)
			checkErr(t, err, tt.wantCode, tt.wantField, tt.wantMsg)
		})
	}
}

func TestDecodeStrictValues(t *testing.T) {
	var v target
	doc := `{"name":"n","promoted":"p","inner":{"count":2},"env":{"k":{"count":3}},"Bare":7}`
	if err := DecodeStrict([]byte(doc), Limits{MaxDepth: 4}, &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "n" || v.Promoted != "p" || v.Inner.Count != 2 || v.Env["k"].Count != 3 || v.Bare != 7 {
		t.Fatalf("decoded %+v", v)
	}
}

func TestCanonical(t *testing.T) {
	type doc struct {
		Zeta  string            `json:"zeta"`
		Alpha map[string]string `json:"alpha"`
		Mid   []int             `json:"mid"`
	}
	v := doc{Zeta: "<a&b>", Alpha: map[string]string{"b": "2", "a": "1", "B": "3"}, Mid: []int{3, 1}}
	got, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"alpha":{"B":"3","a":"1","b":"2"},"mid":[3,1],"zeta":"<a&b>"}`
	if string(got) != want {
		t.Fatalf("Canonical = %s\nwant        %s", got, want)
	}
	again, err := Canonical(v)
	if err != nil || !bytes.Equal(got, again) {
		t.Fatalf("not stable: %s vs %s (%v)", got, again, err)
	}
	norm, err := Normalize(got)
	if err != nil || !bytes.Equal(norm, got) {
		t.Fatalf("canonical form is not a fixed point of Normalize: %s (%v)", norm, err)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: ` { "b" : [ 1 , 2 ] , "a" : { "d":null, "c":true } } `, want: `{"a":{"c":true,"d":null},"b":[1,2]}`},
		{in: `"\u003chtml\u003e \u0026"`, want: `"<html> &"`},
		{in: `"line\nbreak\u0001"`, want: `"line\nbreak\u0001"`},
		{in: `12345678901234567890`, want: `12345678901234567890`},
		{in: `[]`, want: `[]`},
		{in: `{"a":1} {"b":2}`, wantErr: true},
		{in: `{"a":1} x`, wantErr: true},
		{in: `{"a":`, wantErr: true},
		{in: ``, wantErr: true},
	}
	for _, tt := range tests {
		got, err := Normalize([]byte(tt.in))
		if tt.wantErr {
			if err == nil {
				t.Errorf("Normalize(%q) = %s, want error", tt.in, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("Normalize(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestSumDomainSeparation(t *testing.T) {
	doc := []byte(`{"a":1}`)
	a := Sum("ql3/a", doc)
	if a != Sum("ql3/a", doc) {
		t.Fatal("Sum is not deterministic")
	}
	if a == Sum("ql3/b", doc) {
		t.Fatal("different domains share a digest")
	}
	// The 0x00 separator keeps domain and document apart: "ab"+"c" ≠ "a"+"bc".
	if Sum("ab", []byte("c")) == Sum("a", []byte("bc")) {
		t.Fatal("domain/document boundary is ambiguous")
	}
	// Known answer: sha256("d" || 0x00 || "{}").
	const want = "sha256:d1ec84f00b5c45217fdde29c070f9b2ce59277766a49cf49e9bb341c627b5313"
	if got := Sum("d", []byte("{}")).String(); got != want {
		t.Fatalf("Sum = %s, want %s", got, want)
	}
}

func TestDigestRoundTrip(t *testing.T) {
	d := Sum("ql3/test", []byte(`{}`))
	s := d.String()
	if !strings.HasPrefix(s, "sha256:") || len(s) != 7+64 {
		t.Fatalf("String() = %q", s)
	}
	back, err := ParseDigest(s)
	if err != nil || back != d {
		t.Fatalf("ParseDigest(%q) = %v, %v", s, back, err)
	}
	text, err := json.Marshal(struct {
		D Digest `json:"d"`
	}{d})
	if err != nil || string(text) != `{"d":"`+s+`"}` {
		t.Fatalf("MarshalText via json = %s, %v", text, err)
	}
	var out struct {
		D Digest `json:"d"`
	}
	if err := json.Unmarshal(text, &out); err != nil || out.D != d {
		t.Fatalf("UnmarshalText via json = %v, %v", out.D, err)
	}
	for _, bad := range []string{
		"sha256:" + strings.ToUpper(s[7:]), // one text form per digest
		"", "sha256:", s[7:], "SHA256:" + s[7:], "sha512:" + s[7:],
		s[:len(s)-1], s + "0", "sha256:" + strings.Repeat("g", 64), " " + s,
	} {
		if _, err := ParseDigest(bad); errs.Code(err) != errs.Invalid {
			t.Errorf("ParseDigest(%q) err = %v, want invalid", bad, err)
		}
	}
}
