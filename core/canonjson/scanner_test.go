package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanAny reads any value the fast path supports into a tree of
// map[string]any, []any, string, int64 and bool: a shape-free client of the
// Scanner for the differential tests.
func scanAny(s *Scanner, depth int) any {
	if s.Failed() || depth > 64 {
		s.Fail()
		return nil
	}
	s.skipSpace()
	if s.pos >= len(s.src) {
		s.Fail()
		return nil
	}
	switch c := s.src[s.pos]; {
	case c == '{':
		m := map[string]any{}
		s.Object()
		for k, ok := s.Key(); ok; k, ok = s.Key() {
			m[k] = scanAny(s, depth+1)
		}
		return m
	case c == '[':
		a := []any{}
		s.Array()
		for s.More() {
			a = append(a, scanAny(s, depth+1))
		}
		return a
	case c == '"':
		return s.String()
	case c == 't' || c == 'f':
		return s.Bool()
	default:
		return s.Int64()
	}
}

func scanDocument(data []byte, lim Limits) (any, error) {
	var s Scanner
	s.Reset(data, lim)
	s.skipSpace()
	if s.failed || s.pos >= len(s.src) || s.src[s.pos] != '{' {
		return nil, ErrNotFast
	}
	v := scanAny(&s, 0)
	return v, s.Finish()
}

// appendTree writes a scanned tree canonically, with AppendString.
func appendTree(dst []byte, v any) []byte {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = appendTree(dst, v[k])
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTree(dst, e)
		}
		return append(dst, ']')
	case string:
		return AppendString(dst, v)
	case int64:
		return AppendInt(dst, v)
	case bool:
		if v {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	panic("unexpected type")
}

func TestScannerFastPath(t *testing.T) {
	lim := Limits{MaxBytes: 256, MaxDepth: 3, MaxEntries: 4, MaxString: 8}
	cases := []struct {
		doc  string
		fast bool
	}{
		{`{}`, true},
		{` {"a":1, "b" : [true,false,-0,-9223372036854775808], "c":{"d":"x\"\u00e9\ud83d\ude00"}} `, true},
		{`{"a":"12345678"}`, true},
		{`{"a":"\u0041\u0042\u0043\u0044\u0045\u0046\u0047\u0048"}`, true}, // 8 bytes decoded
		{`{"a":"123456789"}`, false},                                       // string limit
		{`{"123456789":1}`, false},                                         // key limit
		{`{"a":1,"b":2,"c":3,"d":4,"e":5}`, false},                         // entries
		{`{"a":[1,2,3,4,5]}`, false},
		{`{"a":{"b":[[1]]}}`, false}, // depth
		{`{"a":1,"A":2}`, false},     // folded duplicate
		{`{"a":1,"a":2}`, false},
		{`{"é":1}`, false},      // non-ASCII key: Unicode folding is the reference's business
		{`{"\u0061":1}`, false}, // escaped key
		{`{"a":null}`, false},   // null
		{`{"a":1.5}`, false},    // float
		{`{"a":1e3}`, false},    // exponent
		{`{"a":01}`, false},     // leading zero
		{`{"a":-}`, false},      // sign only
		{`{"a":9223372036854775808}`, false},
		{`{"a":"\ud800"}`, false},       // lone high surrogate
		{`{"a":"\udfff"}`, false},       // lone low surrogate
		{`{"a":"\ud800\u0041"}`, false}, // high surrogate, no low one
		{`{"a":"\x"}`, false},
		{"{\"a\":\"\x01\"}", false}, // raw control byte
		{"{\"a\":\"\xff\"}", false}, // invalid UTF-8
		{`{"a":1} {}`, false},
		{`{"a":1} x`, false},
		{`{"a":1`, false},
		{`{"a" 1}`, false},
		{`{"a":1,}`, false},
		{`{,"a":1}`, false},
		{`{"a":tru}`, false},
		{`{"a":truex}`, false},
		{`[1]`, false},
	}
	for _, c := range cases {
		v, err := scanDocument([]byte(c.doc), lim)
		if (err == nil) != c.fast {
			t.Errorf("%s: fast path %v (err %v), want %v", c.doc, err == nil, err, c.fast)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrNotFast) {
				t.Errorf("%s: error %v is not ErrNotFast", c.doc, err)
			}
			continue
		}
		checkAgainstReference(t, []byte(c.doc), lim, v)
	}
}

// checkAgainstReference: a document the fast path accepted passes Validate
// with the same limits and decodes (encoding/json, numbers read as int64 the
// way a typed field reads them) to the same tree.
func checkAgainstReference(t *testing.T, data []byte, lim Limits, tree any) {
	t.Helper()
	if err := Validate(data, lim); err != nil {
		t.Fatalf("fast path accepted %q, Validate refuses: %v", data, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ref any
	if err := dec.Decode(&ref); err != nil {
		t.Fatalf("encoding/json refuses %q: %v", data, err)
	}
	want, err := intTree(ref)
	if err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	if !reflect.DeepEqual(tree, want) {
		t.Fatalf("fast path read %q as %s, reference %s", data, appendTree(nil, tree), appendTree(nil, want))
	}
}

func intTree(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			x, err := intTree(e)
			if err != nil {
				return nil, err
			}
			v[k] = x
		}
		return v, nil
	case []any:
		for i, e := range v {
			x, err := intTree(e)
			if err != nil {
				return nil, err
			}
			v[i] = x
		}
		return v, nil
	case json.Number:
		return v.Int64()
	}
	return v, nil
}

func TestScannerManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1`)
	}
	lim := Limits{MaxDepth: 2, MaxEntries: 200}
	if _, err := scanDocument([]byte(b.String()+"}"), lim); err != nil {
		t.Fatalf("100 distinct keys: %v", err)
	}
	if _, err := scanDocument([]byte(b.String()+`,"KAC":2}`), lim); err == nil {
		t.Fatal("a folded duplicate after the set threshold was accepted")
	}
}

func TestScannerIntWidth(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`{"a":2147483648}`), Limits{MaxDepth: 1})
	s.Object()
	s.Key()
	n := s.integer(32)
	if !s.Failed() {
		t.Fatalf("2^31 read as a 32-bit int: %d", n)
	}
	s.Reset([]byte(`{"a":-2147483648}`), Limits{MaxDepth: 1})
	s.Object()
	s.Key()
	if n := s.integer(32); s.Failed() || n != -2147483648 {
		t.Fatalf("-2^31 as a 32-bit int: %d, failed %v", n, s.Failed())
	}
}

// FuzzScanner: whatever the fast path accepts, Validate accepts with the
// same limits and Normalize reads the same value (canonical forms equal).
func FuzzScanner(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":"\ud83d\ude00\n\t\"\\\/","b":[1,-2,true],"c":{"D":"<&>"}}`))
	lim := Limits{MaxBytes: 4096, MaxDepth: 6, MaxEntries: 16, MaxString: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := scanDocument(data, lim)
		if err != nil {
			return
		}
		checkAgainstReference(t, data, lim, v)
	})
}

// FuzzAppendString: AppendString writes what Canonical writes for a
// string, and for valid UTF-8 what encoding/json writes without HTML
// escaping. Invalid UTF-8 is compared with Canonical only: encoding/json
// escaped an invalid byte as \ufffd up to Go 1.26 and writes the character
// from Go 1.27, while the canonical form has always been the character.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\"\\/", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "a\xffb\ufffd", "é😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		canonical, err := Canonical(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, canonical) {
			t.Fatalf("AppendString(%q) = %s, Canonical %s", s, got, canonical)
		}
		if !utf8.ValidString(s) {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if want := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}
