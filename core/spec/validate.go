package spec

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Validate checks the limits; zero fields mean the host's default.
func (l Limits) Validate() error {
	if n := l.MaxProcesses; n != 0 && (n < MinMaxProcesses || n > MaxMaxProcesses) {
		return errs.Invalidf("limits.maxProcesses", "must be %d..%d (or omitted for the host's default), got %d", MinMaxProcesses, MaxMaxProcesses, n)
	}
	if n := l.MemoryBytes; n != 0 && (n < MinMemoryBytes || n > MaxMemoryBytes) {
		return errs.Invalidf("limits.memoryBytes", "must be %d..%d bytes (4 MiB..1 TiB, or omitted for the host's default), got %d", MinMemoryBytes, int64(MaxMemoryBytes), n)
	}
	return nil
}

// Validate checks every field of c against the spec's rules and limits.
// Fields are checked in a fixed order so a spec with several faults always
// reports the same one.
func (c Command) Validate() error {
	if c.Kind != KindCommandV1 {
		return errs.Invalidf("kind", "must be %q, got %.64q", KindCommandV1, c.Kind)
	}
	if err := c.validateProgram(); err != nil {
		return err
	}
	if err := validateEnvironment(c.Environment); err != nil {
		return err
	}
	if err := c.Env.validate(); err != nil {
		return err
	}
	if c.WorkingDirectory != "" {
		if err := checkPath("workingDirectory", c.WorkingDirectory); err != nil {
			return err
		}
		if !path.IsAbs(c.WorkingDirectory) {
			return errs.Invalidf("workingDirectory", "must be an absolute path")
		}
	}
	if c.TimeoutMs < MinTimeoutMs || c.TimeoutMs > MaxTimeoutMs {
		return errs.Invalidf("timeoutMs", "must be %d..%d ms (1 ms..365 days), got %d", MinTimeoutMs, int64(MaxTimeoutMs), c.TimeoutMs)
	}
	if err := c.Retry.Validate(); err != nil {
		return err
	}
	switch c.Concurrency {
	case ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace:
	default:
		return errs.Invalidf("concurrency", "must be allow, forbid or replace, got %.32q", string(c.Concurrency))
	}
	if c.RandomDelayMs < 0 || c.RandomDelayMs > scriptpath.MaxRandomDelayMs {
		return errs.Invalidf("randomDelayMs", "must be 0..%d ms (1 h), got %d", scriptpath.MaxRandomDelayMs, c.RandomDelayMs)
	}
	if c.Limits != nil {
		if err := c.Limits.Validate(); err != nil {
			return err
		}
	}
	if c.Placement != nil {
		if err := c.Placement.Validate(); err != nil {
			return errs.Prefix("placement", err)
		}
	}
	return nil
}

// Validate checks r; fields are named as inside a spec ("retry.maxAttempts").
func (r RetryPolicy) Validate() error {
	if r.MaxAttempts < MinAttempts || r.MaxAttempts > MaxAttempts {
		return errs.Invalidf("retry.maxAttempts", "must be %d..%d, got %d", MinAttempts, MaxAttempts, r.MaxAttempts)
	}
	if r.BackoffBaseMs < 0 || r.BackoffBaseMs > MaxBackoffMs {
		return errs.Invalidf("retry.backoffBaseMs", "must be 0..%d ms (24 h), got %d", int64(MaxBackoffMs), r.BackoffBaseMs)
	}
	if r.BackoffMaxMs < r.BackoffBaseMs || r.BackoffMaxMs > MaxBackoffMs {
		return errs.Invalidf("retry.backoffMaxMs", "must be backoffBaseMs (%d)..%d ms (24 h), got %d",
			r.BackoffBaseMs, int64(MaxBackoffMs), r.BackoffMaxMs)
	}
	return nil
}

func (a *Argv) validate() error {
	if a.File == "" {
		return errs.Invalidf("argv.file", "is required")
	}
	if err := checkPath("argv.file", a.File); err != nil {
		return err
	}
	if len(a.Args) > MaxEntries {
		return errs.TooLargef("argv.args", "has %d elements, limit is %d", len(a.Args), MaxEntries)
	}
	for i, arg := range a.Args {
		if err := checkString("argv.args["+strconv.Itoa(i)+"]", arg, ""); err != nil {
			return err
		}
	}
	return nil
}

func (s *Shell) validate() error {
	if strings.TrimSpace(s.Command) == "" {
		return errs.Invalidf("shell.command", "is required")
	}
	// Scripts need line breaks and tabs; every other control character
	// (CR included) is rejected.
	if err := checkString("shell.command", s.Command, "\n\t"); err != nil {
		return err
	}
	if s.Shell != ShellSh && s.Shell != ShellBash {
		return errs.Invalidf("shell.shell", "must be %s or %s, got %.64q", ShellSh, ShellBash, s.Shell)
	}
	return nil
}

func validateEnvironment(env map[string]string) error {
	if len(env) > MaxEnvEntries {
		return errs.TooLargef("environment", "has %d entries, limit is %d", len(env), MaxEnvEntries)
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(env)) {
		value := env[name]
		if len(name) > MaxStringBytes {
			return errs.TooLargef("environment", "name is %d bytes, limit is %d", len(name), MaxStringBytes)
		}
		if !validEnvName(name) {
			return errs.Invalidf("environment", "name %.64q must match [A-Za-z_][A-Za-z0-9_]*", name)
		}
		field := "environment." + name
		// Reserved case-insensitively: "ql3_x" next to ql3's "QL3_X" would
		// confuse every reader even where the OS keeps them apart.
		if len(name) >= len(ReservedEnvPrefix) && strings.EqualFold(name[:len(ReservedEnvPrefix)], ReservedEnvPrefix) {
			return errs.Invalidf(field, "the %s prefix is reserved for variables ql3 sets", ReservedEnvPrefix)
		}
		if strings.IndexByte(value, 0) >= 0 {
			return errs.Invalidf(field, "value contains a NUL byte")
		}
		if err := checkString(field, value, ""); err != nil {
			return err
		}
		total += len(name) + len(value)
		if total > MaxEnvBytes {
			return errs.TooLargef("environment", "names and values exceed %d bytes in total", MaxEnvBytes)
		}
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || ('A' <= c && c <= 'Z') || ('a' <= c && c <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// checkPath bounds a file-system path: PATH_MAX and no control characters.
func checkPath(field, p string) error {
	if len(p) > MaxPathBytes {
		return errs.TooLargef(field, "is %d bytes, limit is %d", len(p), MaxPathBytes)
	}
	return checkString(field, p, "")
}

// checkString enforces valid UTF-8, the string length limit and the ban on
// control characters (C0, DEL, C1) except those in allowed.
func checkString(field, s, allowed string) error {
	if len(s) > MaxStringBytes {
		return errs.TooLargef(field, "is %d bytes, limit is %d", len(s), MaxStringBytes)
	}
	if !utf8.ValidString(s) {
		return errs.Invalidf(field, "is not valid UTF-8")
	}
	for i, r := range s {
		if unicode.IsControl(r) && !strings.ContainsRune(allowed, r) {
			return errs.Invalidf(field, "contains control character U+%04X at byte %d", r, i)
		}
	}
	return nil
}
