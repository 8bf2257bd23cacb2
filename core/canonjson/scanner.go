package canonjson

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotFast is what a Scanner reports when the document leaves its fast
// path. It is not a verdict: the caller decodes the same bytes with the
// reference decoder (DecodeStrict and its validation), which decides and
// names the field.
var ErrNotFast = errors.New("canonjson: document needs the reference decoder")

// Scanner reads one JSON document of a shape known to its caller, without
// reflection and without building a generic tree: the fast path of a strict
// decoder for a hot body (an offer, a spec).
//
// It accepts a subset of what DecodeStrict accepts for the same Limits: a
// top-level object; valid UTF-8; standard JSON syntax; nesting, entries per
// container and decoded string lengths within the limits; no two keys of
// one object equal after lower-casing (keys must be ASCII); integers without
// fraction or exponent that fit their type; true and false. Anything else —
// null, floats, non-ASCII or escaped keys, unpaired surrogate escapes,
// trailing data, or an unknown key the caller reports with Fail — stops the
// scanner with ErrNotFast. The invariant the callers' differential tests
// check: whatever a fast decoder built on a Scanner accepts, the reference
// decoder accepts with the same value.
//
// Usage: Reset, then Object and a Key loop per object (read exactly one
// value per key), Array and a More loop per array, and Finish. After the
// first failure every method returns zero values and loops end.
//
// Strings returned share the memory of one copy of the document, so a
// decoded value keeps that copy (at most Limits.MaxBytes) alive.
type Scanner struct {
	src    string
	pos    int
	lim    Limits
	failed bool
	depth  int
	stack  [scanMaxDepth]scanLevel
	keys   []string // keys of the open objects, innermost last
	keyBuf [48]string
}

type scanLevel struct {
	n       int  // entries so far
	object  bool // an object (keys) rather than an array
	keyBase int  // index in keys of this object's first key
	set     map[string]struct{}
}

// scanMaxDepth bounds the containers a Scanner keeps open; deeper documents
// leave the fast path.
const scanMaxDepth = 16

// keySetThreshold is the number of keys in one object above which duplicate
// detection switches from pairwise comparison to a set.
const keySetThreshold = 32

// Reset starts reading data under lim.
func (s *Scanner) Reset(data []byte, lim Limits) {
	*s = Scanner{lim: lim}
	s.keys = s.keyBuf[:0]
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes || !utf8.Valid(data) {
		s.failed = true
		return
	}
	s.src = string(data)
}

// SetLimits replaces the string and entry limits for what is read next
// (a member that carries longer strings or more entries than the rest of
// the document) and returns the previous limits to restore afterwards.
// MaxBytes was checked by Reset and is kept.
func (s *Scanner) SetLimits(lim Limits) Limits {
	old := s.lim
	lim.MaxBytes = old.MaxBytes
	s.lim = lim
	return old
}

// Fail leaves the fast path (an unknown key, a value the caller does not
// handle).
func (s *Scanner) Fail() { s.failed = true }

// Failed reports whether the scanner has left the fast path.
func (s *Scanner) Failed() bool { return s.failed }

// Finish checks that only whitespace follows the top-level value and
// returns nil or ErrNotFast.
func (s *Scanner) Finish() error {
	if !s.failed {
		s.skipSpace()
		if s.depth != 0 || s.pos != len(s.src) {
			s.failed = true
		}
	}
	if s.failed {
		return ErrNotFast
	}
	return nil
}

func (s *Scanner) skipSpace() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// open consumes the opening delimiter c of a container.
func (s *Scanner) open(c byte) bool {
	if s.failed {
		return false
	}
	s.skipSpace()
	maxDepth := s.lim.MaxDepth
	if maxDepth <= 0 {
		maxDepth = 1
	}
	if s.pos >= len(s.src) || s.src[s.pos] != c || s.depth >= maxDepth || s.depth >= scanMaxDepth {
		s.failed = true
		return false
	}
	s.pos++
	s.stack[s.depth] = scanLevel{object: c == '{', keyBase: len(s.keys)}
	s.depth++
	return true
}

// Object consumes the '{' of an object value.
func (s *Scanner) Object() bool { return s.open('{') }

// Array consumes the '[' of an array value.
func (s *Scanner) Array() bool { return s.open('[') }

// next moves past the separator before the next entry of the innermost
// container, or past its closing delimiter (returning false).
func (s *Scanner) next(object bool) bool {
	if s.failed || s.depth == 0 {
		s.failed = true
		return false
	}
	lv := &s.stack[s.depth-1]
	if lv.object != object {
		s.failed = true
		return false
	}
	closing := byte(']')
	if object {
		closing = '}'
	}
	s.skipSpace()
	if s.pos >= len(s.src) {
		s.failed = true
		return false
	}
	if s.src[s.pos] == closing {
		s.pos++
		s.depth--
		s.keys = s.keys[:lv.keyBase]
		return false
	}
	if lv.n > 0 {
		if s.src[s.pos] != ',' {
			s.failed = true
			return false
		}
		s.pos++
		s.skipSpace()
	}
	lv.n++
	if s.lim.MaxEntries > 0 && lv.n > s.lim.MaxEntries {
		s.failed = true
		return false
	}
	return true
}

// More reports whether the open array has another element (then read it),
// or consumes its ']'.
func (s *Scanner) More() bool { return s.next(false) }

// Key returns the next key of the open object (then read its value), or
// consumes its '}' and returns false.
func (s *Scanner) Key() (string, bool) {
	if !s.next(true) {
		return "", false
	}
	start := s.pos
	if start >= len(s.src) || s.src[start] != '"' {
		s.failed = true
		return "", false
	}
	end := start + 1
	for end < len(s.src) && s.src[end] != '"' {
		// Keys of the shapes read here are ASCII identifiers; escapes,
		// control and non-ASCII bytes go to the reference decoder (which
		// folds case with Unicode rules).
		if c := s.src[end]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			s.failed = true
			return "", false
		}
		end++
	}
	if end >= len(s.src) {
		s.failed = true
		return "", false
	}
	key := s.src[start+1 : end]
	s.pos = end + 1
	if s.lim.MaxString > 0 && len(key) > s.lim.MaxString || s.duplicate(key) {
		s.failed = true
		return "", false
	}
	s.skipSpace()
	if s.pos >= len(s.src) || s.src[s.pos] != ':' {
		s.failed = true
		return "", false
	}
	s.pos++
	return key, true
}

// duplicate records key in the innermost object and reports whether an
// earlier key of that object equals it after ASCII lower-casing.
func (s *Scanner) duplicate(key string) bool {
	lv := &s.stack[s.depth-1]
	if lv.set != nil {
		folded := asciiLower(key)
		if _, dup := lv.set[folded]; dup {
			return true
		}
		lv.set[folded] = struct{}{}
		return false
	}
	for _, k := range s.keys[lv.keyBase:] {
		if asciiEqualFold(k, key) {
			return true
		}
	}
	s.keys = append(s.keys, key)
	if len(s.keys)-lv.keyBase > keySetThreshold {
		lv.set = make(map[string]struct{}, 2*keySetThreshold)
		for _, k := range s.keys[lv.keyBase:] {
			lv.set[asciiLower(k)] = struct{}{}
		}
	}
	return false
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// String reads a string value.
func (s *Scanner) String() string {
	if s.failed {
		return ""
	}
	s.skipSpace()
	if s.pos >= len(s.src) || s.src[s.pos] != '"' {
		s.failed = true
		return ""
	}
	start := s.pos + 1
	for i := start; i < len(s.src); i++ {
		switch c := s.src[i]; {
		case c == '"':
			s.pos = i + 1
			return s.checkLen(s.src[start:i])
		case c == '\\':
			return s.escapedString(start)
		case c < 0x20:
			s.failed = true
			return ""
		}
	}
	s.failed = true
	return ""
}

func (s *Scanner) checkLen(v string) string {
	if s.lim.MaxString > 0 && len(v) > s.lim.MaxString {
		s.failed = true
		return ""
	}
	return v
}

// escapedString decodes a string with escapes that starts at start.
func (s *Scanner) escapedString(start int) string {
	buf := make([]byte, 0, 64)
	i := start
	for i < len(s.src) {
		c := s.src[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return s.checkLen(string(buf))
		case c < 0x20:
			s.failed = true
			return ""
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(s.src) {
			break
		}
		i += 2
		switch e := s.src[i-1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(s.src, i)
			if !ok {
				s.failed = true
				return ""
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by a low one is a
				// character; anything else is for the reference decoder.
				lo, ok := rune(0), false
				if r < 0xdc00 && i+6 <= len(s.src) && s.src[i] == '\\' && s.src[i+1] == 'u' {
					lo, ok = hex4(s.src, i+2)
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					s.failed = true
					return ""
				}
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			buf = utf8.AppendRune(buf, r)
		default:
			s.failed = true
			return ""
		}
	}
	s.failed = true
	return ""
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// integer reads an integer (no fraction, no exponent) that fits in a
// signed integer of the given bits.
func (s *Scanner) integer(bits uint) int64 {
	if s.failed {
		return 0
	}
	s.skipSpace()
	i, neg := s.pos, false
	if i < len(s.src) && s.src[i] == '-' {
		neg = true
		i++
	}
	digits := i
	var u uint64
	for i < len(s.src) && '0' <= s.src[i] && s.src[i] <= '9' {
		d := uint64(s.src[i] - '0')
		if u > (1<<63)/10 || u*10 > 1<<63-d {
			s.failed = true // beyond ±2^63
			return 0
		}
		u = u*10 + d
		i++
	}
	n := i - digits
	if n == 0 || n > 1 && s.src[digits] == '0' ||
		i < len(s.src) && (s.src[i] == '.' || s.src[i] == 'e' || s.src[i] == 'E') {
		s.failed = true
		return 0
	}
	limit := uint64(1) << (bits - 1) // magnitude of the most negative value
	if !neg && u >= limit || neg && u > limit {
		s.failed = true
		return 0
	}
	s.pos = i
	if neg {
		return -int64(u)
	}
	return int64(u)
}

// Int64 reads an integer that fits in an int64.
func (s *Scanner) Int64() int64 { return s.integer(64) }

// Int reads an integer that fits in an int on this platform (32 bits on
// the routers the worker runs on).
func (s *Scanner) Int() int { return int(s.integer(intBits)) }

const intBits = 32 << (^uint(0) >> 63)

// Bool reads true or false.
func (s *Scanner) Bool() bool {
	if s.failed {
		return false
	}
	s.skipSpace()
	rest := s.src[s.pos:]
	switch {
	case len(rest) >= 4 && rest[:4] == "true":
		s.pos += 4
		return true
	case len(rest) >= 5 && rest[:5] == "false":
		s.pos += 5
		return false
	}
	s.failed = true
	return false
}
