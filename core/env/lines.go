package env

import (
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Line is one NAME=value pair of the line format.
type Line struct {
	Name  string
	Value string
}

// MaxLineBytes bounds one line of the line format: a name, "=", a value
// and two quotes.
const MaxLineBytes = MaxNameBytes + 1 + MaxValueBytes + 2

// ParseLines reads the line format, one NAME=value per line, the format
// QingLong users keep their variables in:
//
//   - blank lines and lines starting with "#" (after spaces) are skipped;
//   - an optional "export " prefix is dropped (shell files paste as is);
//   - the value is the rest of the line after the first "=", verbatim, a
//     trailing CR removed; a value wrapped in one pair of matching quotes
//     ('…' or "…") loses them — nothing else is unescaped;
//   - the same name may appear more than once (one entry each, in order).
//
// Errors name the line ("lines[3]", 1-based) and say why; names and values
// are checked with ValidateName and ValidateValue.
func ParseLines(text string) ([]Line, error) {
	var out []Line
	for i, raw := range strings.Split(text, "\n") {
		field := "lines[" + strconv.Itoa(i+1) + "]"
		raw = strings.TrimSuffix(raw, "\r")
		if len(raw) > MaxLineBytes {
			return nil, errs.Invalidf(field, "is %d bytes, limit is %d", len(raw), MaxLineBytes)
		}
		trimmed := strings.TrimLeft(raw, " \t")
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if len(out) >= MaxEntries {
			return nil, errs.Invalidf(field, "more than %d entries", MaxEntries)
		}
		if rest, ok := strings.CutPrefix(trimmed, "export "); ok {
			trimmed = strings.TrimLeft(rest, " \t")
		}
		name, value, ok := strings.Cut(trimmed, "=")
		if !ok {
			return nil, errs.Invalidf(field, "expected NAME=value")
		}
		value = unquote(value)
		if err := ValidateName(name); err != nil {
			return nil, errs.Prefix(field, err)
		}
		if err := ValidateValue(value); err != nil {
			return nil, errs.Prefix(field, err)
		}
		out = append(out, Line{Name: name, Value: value})
	}
	return out, nil
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// FormatLines writes lines so ParseLines reads them back unchanged: a
// value that ParseLines would unquote is wrapped in the other quote. A
// value with a line break cannot be written (use the JSON format); the
// error names the entry.
func FormatLines(lines []Line) (string, error) {
	var b strings.Builder
	for i, l := range lines {
		if strings.ContainsAny(l.Value, "\n\r") {
			return "", errs.Invalidf("lines["+strconv.Itoa(i+1)+"]", "the value of %s has a line break; export it as JSON", l.Name)
		}
		b.WriteString(l.Name)
		b.WriteByte('=')
		switch v := l.Value; {
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			b.WriteString(`"` + v + `"`)
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			b.WriteString(`'` + v + `'`)
		default:
			b.WriteString(v)
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}
