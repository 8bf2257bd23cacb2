// Package scriptmeta reads the schedule and the display name a script
// declares in its own text, the way QingLong scripts do it, so that a
// subscription can turn a repository of scripts into tasks.
//
// A script declares its schedule in one of three shapes (checked in this
// order, the first that yields an expression wins):
//
//  1. a line holding a cron expression followed, later on the same line,
//     by the script's own file name — the Quantumult X / Loon / Surge
//     rewrite lines many repositories carry in a header comment:
//     `5 8 * * * https://…/jd_bean.js, tag=京豆`,
//     `京豆 = type=cron,cronexp="5 8 * * *",script-path=jd_bean.js`;
//  2. a `cron:` marker: `// cron: 0 0 * * *`, `# cron: 5 8 * * *`;
//  3. a quoted `cron "…"` form: `cron "5 8 * * *" script-path=…`.
//
// and its name as the first quoted argument of `new Env(…)`, else a
// `name:` marker, else the file's base name.
//
// The package is pure: it gets the bytes and answers; reading the file,
// the limits of a pull and creating tasks are the caller's.
package scriptmeta

import (
	"bytes"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ql3/ql3/core/cron"
)

// MaxScanBytes bounds how much of a script is read for its header: the
// declarations sit at the top, and a subscription may hold thousands of
// files, some of them megabytes of bundled code.
const MaxScanBytes = 256 << 10

// Where a value came from, reported so a plan can explain itself.
const (
	FromScriptLine = "script_line" // shape 1: cron followed by the file name
	FromCronMarker = "cron_marker" // shape 2: `cron:`
	FromCronQuoted = "cron_quoted" // shape 3: `cron "…"`
	FromNewEnv     = "new_env"     // name from new Env('…')
	FromNameMarker = "name_marker" // name from `name:`
	FromFileName   = "file_name"   // name is the file's base name
)

// Header is what a script declares. Cron is empty when the script
// declares no usable schedule; Skip then says why in words an operator
// can act on (shown in the subscription Run's log and in the plan).
type Header struct {
	Cron       string
	CronSource string
	Name       string
	NameSource string
	Skip       string
}

// cronField is one field of a numeric cron expression as QingLong's
// pattern sees it: digits, '*', ',', '-', '/'.
const cronField = `[0-9*][0-9*,/\-]*`

// scriptLine finds five or six cron fields followed by a space, a comma or
// a quote (shape 1); the caller checks the file name follows.
var scriptLine = regexp.MustCompile(`(?:^|[^0-9*,/\-])((?:` + cronField + ` +){4,5}` + cronField + `)(?: |,|"|')`)

// leadingFields takes the cron-looking tokens at the start of s.
var leadingFields = regexp.MustCompile(`^(?:` + cronField + `(?: +|$)){5,6}`)

var descriptor = regexp.MustCompile(`^@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)\b`)

// Parse reads the header of the script called file (a path; only its base
// name is used) from content.
func Parse(file string, content []byte) Header {
	if len(content) > MaxScanBytes {
		content = content[:MaxScanBytes]
	}
	base := path.Base(file)
	var h Header
	var lines []string
	for _, raw := range bytes.Split(content, []byte("\n")) {
		line := strings.TrimRight(string(raw), "\r")
		if !utf8.ValidString(line) {
			line = strings.ToValidUTF8(line, "\uFFFD")
		}
		lines = append(lines, line)
	}

	var found string // the first candidate expression, valid or not
	for _, try := range []struct {
		source string
		find   func(string) string
	}{
		{FromScriptLine, func(l string) string { return fromScriptLine(l, base) }},
		{FromCronMarker, fromCronMarker},
		{FromCronQuoted, fromCronQuoted},
	} {
		for _, l := range lines {
			expr := try.find(l)
			if expr == "" {
				continue
			}
			if found == "" {
				found = expr
			}
			if valid, ok := validCron(expr); ok {
				h.Cron, h.CronSource = valid, try.source
				break
			}
		}
		if h.Cron != "" {
			break
		}
	}
	switch {
	case h.Cron == "" && found != "":
		_, err := cron.Parse(found, time.UTC)
		h.Skip = "the cron comment " + quote(found) + " is not a valid cron expression: " + errText(err)
	case h.Cron == "":
		h.Skip = "no cron comment (cron: …, cron \"…\", or a rewrite line naming " + base + ")"
	}

	h.Name, h.NameSource = base, FromFileName
	for _, l := range lines {
		if n := fromNewEnv(l); n != "" {
			h.Name, h.NameSource = n, FromNewEnv
			return h
		}
	}
	for _, l := range lines {
		if n := fromNameMarker(l); n != "" {
			h.Name, h.NameSource = n, FromNameMarker
			return h
		}
	}
	return h
}

// validCron returns the expression with its fields single-spaced when it
// parses; six tokens that fail are retried as five (a `*/` comment closer
// after a five-field expression looks like a sixth field).
func validCron(expr string) (string, bool) {
	fields := strings.Fields(expr)
	for len(fields) >= 1 {
		e := strings.Join(fields, " ")
		if _, err := cron.Parse(e, time.UTC); err == nil {
			return e, true
		}
		if len(fields) != 6 {
			return "", false
		}
		fields = fields[:5]
	}
	return "", false
}

func fromScriptLine(line, base string) string {
	for _, m := range scriptLine.FindAllStringSubmatchIndex(line, -1) {
		rest := line[m[3]:]
		if strings.Contains(rest, base) {
			return line[m[2]:m[3]]
		}
	}
	return ""
}

func fromCronMarker(line string) string {
	i := strings.Index(line, "cron:")
	if i < 0 {
		return ""
	}
	return leadingExpr(strings.TrimSpace(line[i+len("cron:"):]))
}

func fromCronQuoted(line string) string {
	i := strings.Index(line, `cron "`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(`cron "`):]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(rest[:j])
}

// leadingExpr is the expression at the start of s: a descriptor, or the
// run of five or six cron-looking fields; else s itself up to a quote or a
// comment closer, so a malformed expression is reported as written.
func leadingExpr(s string) string {
	if d := descriptor.FindString(s); d != "" {
		return d
	}
	if f := leadingFields.FindString(s); f != "" {
		return strings.TrimSpace(f)
	}
	if k := strings.IndexAny(s, `"'`); k >= 0 {
		s = s[:k]
	}
	s = strings.TrimSuffix(strings.TrimSpace(s), "*/")
	return strings.TrimSpace(s)
}

// fromNewEnv is the first quoted string inside `new Env(…)`.
func fromNewEnv(line string) string {
	i := strings.Index(line, "new Env(")
	if i < 0 {
		return ""
	}
	rest := line[i+len("new Env("):]
	for _, q := range []byte{'\'', '"', '`'} {
		if len(rest) > 0 && rest[0] == q {
			if j := strings.IndexByte(rest[1:], q); j >= 0 {
				return cleanName(rest[1 : 1+j])
			}
		}
	}
	return ""
}

func fromNameMarker(line string) string {
	i := strings.Index(line, "name:")
	if i < 0 {
		return ""
	}
	v := strings.TrimSpace(line[i+len("name:"):])
	v = strings.TrimSpace(strings.TrimSuffix(v, "*/"))
	return cleanName(strings.Trim(v, `"',;`))
}

// cleanName trims a declared name to something a task can be called:
// surrounding space, and at most 128 characters (the display-name limit).
func cleanName(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > 128 {
		r := []rune(s)
		s = string(r[:128])
	}
	return s
}

func quote(s string) string {
	if utf8.RuneCountInString(s) > 64 {
		s = string([]rune(s)[:64]) + "…"
	}
	return `"` + s + `"`
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
