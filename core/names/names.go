// Package names holds the rules every human-chosen name in ql3 follows
// (edge tasks; cluster projects, tasks, triggers, workers, tokens): a name
// must be readable as what it is. Lookups accept "id or name", so a name
// that looks like an id could make a command act on another object; a
// name of only spaces or invisible characters cannot be told apart from
// another; bidirectional controls make a name display differently from
// what it is (Trojan Source). Lengths stay with each caller.
package names

import (
	"unicode"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
)

// Check validates name, naming field in the error: valid UTF-8, no control
// or bidirectional-control characters, at least one visible character, and
// not shaped like an id.
func Check(field, name string) error {
	if !utf8.ValidString(name) {
		return errs.Invalidf(field, "is not valid UTF-8")
	}
	visible := false
	for i, r := range name {
		switch {
		case r == utf8.RuneError:
			return errs.Invalidf(field, "must not contain U+FFFD (a replacement character)")
		case unicode.IsControl(r):
			return errs.Invalidf(field, "must not contain control characters (byte %d)", i)
		case IsBidiControl(r):
			return errs.Invalidf(field, "must not contain bidirectional control characters (U+%04X at byte %d): the name would display differently from what it is", r, i)
		case isVisible(r):
			visible = true
		}
	}
	if !visible {
		return errs.Invalidf(field, "must contain a visible character (not only spaces or invisible characters)")
	}
	if LooksLikeID(name) {
		return errs.Invalidf(field, "must not look like an id (a UUID): lookups by id or name would be ambiguous")
	}
	return nil
}

// IsBidiControl reports the Unicode bidirectional formatting characters:
// ALM, LRM, RLM, the embeddings and overrides LRE..RLO, and the isolates
// LRI..PDI.
func IsBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// isVisible is a character that leaves a mark on its own: graphic, not
// white space, not a format character (zero-width space, joiners, BOM,
// soft hyphen) and not a combining mark.
func isVisible(r rune) bool {
	return unicode.IsGraphic(r) && !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) &&
		!unicode.Is(unicode.M, r) && r != 0x3164 && r != 0x115F && r != 0x1160 && r != 0xFFA0 && r != 0x2800
}

// LooksLikeID reports whether s is in a form a UUID parser accepts
// (32 hex digits, with or without the four hyphens, in braces or with the
// urn:uuid: prefix, any case).
func LooksLikeID(s string) bool {
	switch {
	case len(s) == 45 && (s[:9] == "urn:uuid:" || s[:9] == "URN:UUID:"):
		s = s[9:]
	case len(s) == 38 && s[0] == '{' && s[37] == '}':
		s = s[1:37]
	}
	switch len(s) {
	case 32:
		return isHex(s)
	case 36:
		return s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' &&
			isHex(s[:8]) && isHex(s[9:13]) && isHex(s[14:18]) && isHex(s[19:23]) && isHex(s[24:])
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
