// Package find holds the pure rules of finding tasks (ADR 0050, ADR
// 0057): the text a task search looks in, how a search is checked and
// folded. ql3-edge (SQLite) and ql3-control (PostgreSQL) both store the
// same search text and match a search the same way: a substring test.
package find

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/spec"
)

// MaxSearchChars bounds a search, in characters.
const MaxSearchChars = 128

// Fold lower-cases ASCII letters only (SQLite's lower(), PostgreSQL's
// translate over A–Z), so the search text written by Go and by a
// migration's SQL agree; other scripts (Chinese among them) have no case
// to fold.
func Fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// CommandText is the command a search looks in: the shell command, or the
// program and its arguments separated by spaces.
func CommandText(c spec.Command) string {
	switch {
	case c.Shell != nil:
		return c.Shell.Command
	case c.Argv != nil:
		if len(c.Argv.Args) == 0 {
			return c.Argv.File
		}
		return c.Argv.File + " " + strings.Join(c.Argv.Args, " ")
	}
	return ""
}

// Text is what a task search looks in: name, command and labels, one per
// line, folded by Fold.
func Text(name string, c spec.Command, labels []string) string {
	s := name + "\n" + CommandText(c)
	if len(labels) > 0 {
		s += "\n" + strings.Join(labels, "\n")
	}
	return Fold(s)
}

// CheckSearch validates a search and returns the form it is matched in
// (a readable name's normal form where it is one, folded): 1..MaxSearchChars
// characters, no control characters; an empty or blank search means "no
// search" ("").
func CheckSearch(field, q string) (string, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return "", nil
	}
	if !utf8.ValidString(q) {
		return "", errs.Invalidf(field, "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(q); n > MaxSearchChars {
		return "", errs.Invalidf(field, "must be at most %d characters, got %d", MaxSearchChars, n)
	}
	if strings.IndexFunc(q, unicode.IsControl) >= 0 {
		return "", errs.Invalidf(field, "must not contain control characters")
	}
	if n, err := names.CheckDisplay(field, q); err == nil {
		q = n
	}
	return Fold(q), nil
}
