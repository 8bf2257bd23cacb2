package canonjson

import (
	"strconv"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string exactly as the canonical
// form writes it (encoding/json without HTML escaping): '"' and '\\'
// escaped, \b \f \n \r \t by name, other control bytes as \u00XX, U+2028
// and U+2029 as \u2028 and \u2029, and each invalid UTF-8 byte as the
// character U+FFFD, which is what Canonical writes: it re-encodes a decoded
// value, and decoding has already replaced the byte (ADR 0003). Go 1.26's
// encoder escaped such a byte as \ufffd and Go 1.27's writes the character,
// so the canonical bytes must not follow the toolchain. Hand written
// canonical encoders use it; a differential test holds it to Canonical and,
// for valid UTF-8, to encoding/json.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendInt appends n as the canonical form writes an integer.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }
