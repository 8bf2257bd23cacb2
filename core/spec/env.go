package spec

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// EnvScope says which entries of the shared env store (core/env) a task's
// process sees, and who wins when a name is both there and in the task's
// own inline environment.
//
//   - No "env" (nil): every enabled entry (QingLong's behaviour).
//   - "use": [names]: only the entries with those names (at least one).
//   - "inlineWins": true: on a clash the task's inline environment wins;
//     by default the store's value wins, so a task cannot quietly shadow a
//     secret that operators rotate in the store.
//
// The inline environment stays for non-secret settings: it is part of the
// spec, readable by anyone who may read the task.
type EnvScope struct {
	Use        []string `json:"use,omitempty"` // empty: every entry
	InlineWins bool     `json:"inlineWins,omitempty"`
}

// All reports whether the scope lets the task see every enabled entry.
func (e *EnvScope) All() bool { return e == nil || len(e.Use) == 0 }

// Wins reports whether the task's inline environment wins a clash.
func (e *EnvScope) Wins() bool { return e != nil && e.InlineWins }

// normalizeEnvScope returns a copy with Use sorted (the order of an
// allowlist means nothing), or nil when the scope says nothing beyond the
// default.
func normalizeEnvScope(e *EnvScope) *EnvScope {
	if e == nil || (e.Use == nil && !e.InlineWins) {
		return nil
	}
	out := &EnvScope{InlineWins: e.InlineWins}
	if e.Use != nil {
		out.Use = append([]string{}, e.Use...) // an empty list stays non-nil for validate to refuse
		slices.Sort(out.Use)
	}
	return out
}

func (e *EnvScope) validate() error {
	if e == nil {
		return nil
	}
	if e.Use != nil && len(e.Use) == 0 {
		return errs.Invalidf("env.use", "must name at least one variable; omit it to see every enabled entry")
	}
	if len(e.Use) > MaxEnvEntries {
		return errs.TooLargef("env.use", "has %d names, limit is %d", len(e.Use), MaxEnvEntries)
	}
	for i, name := range e.Use {
		field := "env.use[" + strconv.Itoa(i) + "]"
		if len(name) > 256 || !validEnvName(name) {
			return errs.Invalidf(field, "%.64q must be a variable name matching [A-Za-z_][A-Za-z0-9_]* (at most 256 bytes)", name)
		}
		if len(name) >= len(ReservedEnvPrefix) && strings.EqualFold(name[:len(ReservedEnvPrefix)], ReservedEnvPrefix) {
			return errs.Invalidf(field, "the %s prefix is reserved for variables ql3 sets", ReservedEnvPrefix)
		}
		if slices.Contains(e.Use[:i], name) {
			return errs.Invalidf(field, "%q is listed twice", name)
		}
	}
	return nil
}

// appendEnvScope writes a normalized, non-nil scope canonically.
func appendEnvScope(b []byte, e *EnvScope) []byte {
	b = append(b, '{')
	if e.InlineWins {
		b = append(b, `"inlineWins":true`...)
	}
	if len(e.Use) > 0 {
		if e.InlineWins {
			b = append(b, ',')
		}
		b = append(b, `"use":`...)
		b = appendStrings(b, e.Use)
	}
	return append(b, '}')
}

func scanEnvScope(s *canonjson.Scanner) *EnvScope {
	e := &EnvScope{}
	if !s.Object() {
		return e
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "use":
			e.Use = scanStrings(s)
		case "inlineWins":
			e.InlineWins = s.Bool()
		default:
			s.Fail()
		}
	}
	return e
}
