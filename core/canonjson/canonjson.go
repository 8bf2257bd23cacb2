// Package canonjson is ql3's strict JSON front door and its canonical form.
//
// Every externally supplied JSON document (task specs, capabilities, wire
// bodies) is first checked structurally by Validate — size, depth, entries
// per container, string length, valid UTF-8, no duplicate keys, exactly one
// value — and only then decoded into a Go struct with unknown fields
// rejected (field names matched exactly, not case-insensitively). Errors
// name the offending field as a dotted path and the limit.
//
// Canonical re-encodes a value with object keys sorted, no insignificant
// whitespace and no HTML escaping, so equal documents have equal bytes and
// therefore equal digests. See docs/adr/0003-canonical-json-and-digests.md.
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
)

// Limits bound a document. Zero fields mean "no limit" except MaxDepth,
// where zero is treated as 1 (a flat object).
type Limits struct {
	MaxBytes   int // whole document
	MaxDepth   int // nesting of objects/arrays; the top-level object is depth 1
	MaxEntries int // members of one object or elements of one array
	MaxString  int // bytes of one string (keys and values)
}

// Validate checks data against lim without decoding it into a type.
func Validate(data []byte, lim Limits) error {
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return errs.TooLargef("", "document is %d bytes, limit is %d", len(data), lim.MaxBytes)
	}
	if !utf8.Valid(data) {
		return errs.Invalidf("", "document is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, lim: lim, data: data}
	if err := w.value("", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.Invalidf("", "unexpected data after the JSON value")
	}
	return nil
}

type walker struct {
	dec  *json.Decoder
	lim  Limits
	data []byte
}

// next reads a token and, for a string, returns its raw bytes too, so the
// caller can refuse an unpaired surrogate escape, which encoding/json would
// turn into U+FFFD silently (ADR 0003: "\ud800", "\udfff" and "\ufffd"
// must not be one value).
func (w *walker) next() (json.Token, []byte, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if _, ok := tok.(string); ok {
		// The bytes since the previous token are this string plus
		// separators and whitespace, which hold no backslash.
		return tok, w.data[start:w.dec.InputOffset()], nil
	}
	return tok, nil, nil
}

func (w *walker) value(path string, depth int) error {
	tok, raw, err := w.next()
	if err != nil {
		return syntaxError(path, err)
	}
	if esc, bad := unpairedSurrogate(raw); bad {
		return errs.Invalidf(path, "contains the unpaired UTF-16 surrogate escape \\u%s; it is not a character", esc)
	}
	return w.token(tok, path, depth)
}

// unpairedSurrogate finds a \uD800–\uDFFF escape in raw JSON string bytes
// that is not a high surrogate immediately followed by a low one, and
// returns its four hex digits.
func unpairedSurrogate(raw []byte) (string, bool) {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped byte: an escaped backslash is skipped whole
		if i >= len(raw) || raw[i] != 'u' || i+4 >= len(raw) {
			continue
		}
		r, ok := hex4(string(raw[i+1:i+5]), 0)
		if !ok || r < 0xd800 || r > 0xdfff {
			i += 4
			continue
		}
		if r < 0xdc00 && i+10 < len(raw) && raw[i+5] == '\\' && raw[i+6] == 'u' {
			if lo, ok := hex4(string(raw[i+7:i+11]), 0); ok && lo >= 0xdc00 && lo <= 0xdfff {
				i += 10
				continue
			}
		}
		return string(raw[i+1 : i+5]), true
	}
	return "", false
}

func (w *walker) token(tok json.Token, path string, depth int) error {
	switch t := tok.(type) {
	case json.Delim:
		depth++
		maxDepth := w.lim.MaxDepth
		if maxDepth <= 0 {
			maxDepth = 1
		}
		if depth > maxDepth {
			return errs.Invalidf(path, "nesting depth exceeds the limit of %d", maxDepth)
		}
		if t == '{' {
			return w.object(path, depth)
		}
		return w.array(path, depth)
	case string:
		if w.lim.MaxString > 0 && len(t) > w.lim.MaxString {
			return errs.TooLargef(path, "string is %d bytes, limit is %d", len(t), w.lim.MaxString)
		}
	}
	return nil
}

func (w *walker) object(path string, depth int) error {
	seen := make(map[string]struct{})
	n := 0
	for w.dec.More() {
		tok, raw, err := w.next()
		if err != nil {
			return syntaxError(path, err)
		}
		key, _ := tok.(string)
		child := Join(path, key)
		if esc, bad := unpairedSurrogate(raw); bad {
			return errs.Invalidf(child, "key contains the unpaired UTF-16 surrogate escape \\u%s; it is not a character", esc)
		}
		if w.lim.MaxString > 0 && len(key) > w.lim.MaxString {
			return errs.TooLargef(child, "key is %d bytes, limit is %d", len(key), w.lim.MaxString)
		}
		// encoding/json matches struct fields case-insensitively, so "file"
		// and "File" would silently overwrite each other: treat them as
		// duplicates too.
		folded := strings.ToLower(key)
		if _, dup := seen[folded]; dup {
			return errs.Invalidf(child, "duplicate key")
		}
		seen[folded] = struct{}{}
		n++
		if w.lim.MaxEntries > 0 && n > w.lim.MaxEntries {
			return errs.TooLargef(path, "object has more than %d entries", w.lim.MaxEntries)
		}
		if err := w.value(child, depth); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return syntaxError(path, err)
}

func (w *walker) array(path string, depth int) error {
	n := 0
	for w.dec.More() {
		child := path + "[" + strconv.Itoa(n) + "]"
		n++
		if w.lim.MaxEntries > 0 && n > w.lim.MaxEntries {
			return errs.TooLargef(path, "array has more than %d elements", w.lim.MaxEntries)
		}
		if err := w.value(child, depth); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	return syntaxError(path, err)
}

func syntaxError(path string, err error) error {
	if err == nil {
		return nil
	}
	if err == io.EOF {
		return errs.Invalidf(path, "unexpected end of JSON")
	}
	return errs.Invalidf(path, "malformed JSON: %v", err)
}

// Join builds the dotted path of a child member.
func Join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// DecodeStrict validates data against lim and decodes it into v (a pointer
// to a struct), rejecting unknown fields. Struct field names must match
// exactly (encoding/json alone would accept "Kind" for "kind"). The top
// level must be an object.
func DecodeStrict(data []byte, lim Limits, v any) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
			return errs.TooLargef("", "document is %d bytes, limit is %d", len(data), lim.MaxBytes)
		}
		return errs.Invalidf("", "expected a JSON object")
	}
	if err := Validate(data, lim); err != nil {
		return err
	}
	if err := checkFieldNames(data, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	return nil
}

// decodeError turns encoding/json's errors into coded errors with a field.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return errs.Invalidf(te.Field, "expected %s, got JSON %s", te.Type, te.Value)
	}
	msg := err.Error()
	// encoding/json reports unknown fields only as text: `json: unknown field "x"`.
	if i := strings.Index(msg, "unknown field "); i >= 0 {
		name, uerr := strconv.Unquote(msg[i+len("unknown field "):])
		if uerr == nil {
			return errs.Invalidf(name, "unknown field")
		}
	}
	return errs.Invalidf("", "malformed JSON: %v", err)
}

// Canonical encodes v as canonical JSON: object keys sorted bytewise, no
// insignificant whitespace, no HTML escaping, numbers as written by
// encoding/json. v must not contain floats that need exponent notation.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Normalize(raw)
}

// Normalize re-encodes an arbitrary JSON document canonically.
func Normalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errs.Invalidf("", "unexpected data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Digest is a SHA-256 content digest.
type Digest [sha256.Size]byte

// Sum returns the digest of canonical under a domain-separation prefix, so a
// task spec and a capability document with equal bytes never share a digest:
// sha256(domain || 0x00 || canonical).
func Sum(domain string, canonical []byte) Digest {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write(canonical)
	var d Digest
	h.Sum(d[:0])
	return d
}

// String renders the digest as "sha256:<64 hex>".
func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// ParseDigest parses the "sha256:<64 lower-case hex>" form. Upper-case hex
// is rejected so every digest has exactly one text form and text compares
// agree with value compares.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hexPart) != 2*sha256.Size || strings.ContainsAny(hexPart, "ABCDEF") {
		return d, errs.Invalidf("", "digest must be sha256:<64 lower-case hex digits>")
	}
	if _, err := hex.Decode(d[:], []byte(hexPart)); err != nil {
		return d, errs.Invalidf("", "digest must be sha256:<64 lower-case hex digits>")
	}
	return d, nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// checkFieldNames rejects object keys that do not exactly equal a JSON field
// name of the struct they decode into. encoding/json matches field names
// case-insensitively (with Unicode folding: "ſ" matches "s"), so without
// this check {"Kind": …} would be accepted as "kind" and DisallowUnknownFields
// would never fire; a strict decoder accepts only the spelling the canonical
// form uses. The error names the full path of the key.
func checkFieldNames(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return decodeError(err)
	}
	return checkNames(reflect.TypeOf(v), generic, "")
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

func checkNames(t reflect.Type, v any, path string) error {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		if customDecoded(t) {
			return nil
		}
		t = t.Elem()
	}
	if customDecoded(t) || customDecoded(reflect.PointerTo(t)) {
		return nil // the type decides for itself what it accepts
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // a type mismatch; encoding/json reports it with its field
		}
		fields := make(map[string]reflect.Type)
		structFields(t, fields)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys) // deterministic: the same document always reports the same key
		for _, k := range keys {
			ft, known := fields[k]
			if !known {
				return errs.Invalidf(Join(path, k), "unknown field")
			}
			if err := checkNames(ft, obj[k], Join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for k, val := range obj {
			if err := checkNames(t.Elem(), val, Join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, val := range arr {
			if err := checkNames(t.Elem(), val, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func customDecoded(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler)
}

// structFields collects the JSON names of t's fields the way encoding/json
// names them: the tag name, else the Go name; "-" skipped; untagged embedded
// structs promote their fields.
// Direct fields are collected before promoted ones so a shallower field
// shadows a deeper one, as in encoding/json.
func structFields(t reflect.Type, into map[string]reflect.Type) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := into[name]; !taken {
			into[name] = f.Type
		}
	}
	for _, et := range embedded {
		structFields(et, into)
	}
}
