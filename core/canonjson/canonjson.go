// Package canonjson is ql3's strict JSON front door and its canonical form.
//
// Every externally supplied JSON document (task specs, capabilities, wire
// bodies) is first checked structurally by Validate — size, depth, entries
// per container, string length, valid UTF-8, no duplicate keys, exactly one
// value — and only then decoded into a Go struct with unknown fields
// rejected. Errors name the offending field as a dotted path and the limit.
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
	w := walker{dec: dec, lim: lim}
	if err := w.value("", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.Invalidf("", "unexpected data after the JSON value")
	}
	return nil
}

type walker struct {
	dec *json.Decoder
	lim Limits
}

func (w *walker) value(path string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return syntaxError(path, err)
	}
	return w.token(tok, path, depth)
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
		tok, err := w.dec.Token()
		if err != nil {
			return syntaxError(path, err)
		}
		key, _ := tok.(string)
		child := Join(path, key)
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
// to a struct), rejecting unknown fields. The top level must be an object.
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

// ParseDigest parses the "sha256:<64 hex>" form.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hexPart) != 2*sha256.Size {
		return d, errs.Invalidf("", "digest must be sha256:<64 hex digits>")
	}
	if _, err := hex.Decode(d[:], []byte(hexPart)); err != nil {
		return d, errs.Invalidf("", "digest must be sha256:<64 hex digits>")
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
