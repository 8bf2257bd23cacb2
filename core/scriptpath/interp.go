package scriptpath

import (
	"sort"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// DefaultInterpreters maps a file extension to the programs that run it,
// in order of preference (the caller takes the first one it finds on the
// PATH). QingLong's task runner uses the same mapping; `.ts` tries tsx
// before ts-node because tsx needs no tsconfig.
var DefaultInterpreters = map[string][]string{
	".js":  {"node"},
	".mjs": {"node"},
	".cjs": {"node"},
	".py":  {"python3"},
	".sh":  {"bash"},
	".ts":  {"tsx", "ts-node"},
}

// Interpreters is a binary's extension → programs table: the defaults
// with the operator's overrides (--interpreter .py=/opt/py/bin/python3).
type Interpreters map[string][]string

// NewInterpreters returns the defaults with overrides applied; each
// override is "EXT=PROGRAM" with EXT one of the known extensions or a new
// one starting with '.'.
func NewInterpreters(overrides []string) (Interpreters, error) {
	t := make(Interpreters, len(DefaultInterpreters))
	for ext, progs := range DefaultInterpreters {
		t[ext] = append([]string(nil), progs...)
	}
	for _, o := range overrides {
		ext, prog, ok := strings.Cut(o, "=")
		ext = strings.ToLower(strings.TrimSpace(ext))
		prog = strings.TrimSpace(prog)
		switch {
		case !ok || prog == "":
			return nil, errs.Invalidf("interpreter", "must be EXT=PROGRAM (e.g. .py=/usr/bin/python3), got %q", o)
		case len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext[1:], "./ \t"):
			return nil, errs.Invalidf("interpreter", "extension must look like .py, got %q", ext)
		case strings.ContainsAny(prog, "\x00\n"):
			return nil, errs.Invalidf("interpreter", "program must not contain NUL or newline")
		}
		t[ext] = []string{prog}
	}
	return t, nil
}

// For returns the programs that may run file, or an error naming the
// extension and the ones that are supported (refused at publish, so a task
// never fails at 3 a.m. for a file nobody can run).
func (t Interpreters) For(field, file string) ([]string, error) {
	base := Base(file)
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return nil, errs.Invalidf(field, "%q has no extension; supported: %s", base, t.extensions())
	}
	ext := strings.ToLower(base[i:])
	progs, ok := t[ext]
	if !ok {
		return nil, errs.Invalidf(field, "no interpreter for %q files; supported: %s (add one with --interpreter %s=PROGRAM)", ext, t.extensions(), ext)
	}
	return progs, nil
}

func (t Interpreters) extensions() string {
	exts := make([]string, 0, len(t))
	for e := range t {
		exts = append(exts, e)
	}
	sort.Strings(exts)
	return strings.Join(exts, " ")
}

// DefaultInterpretersTable is the defaults as an Interpreters table.
func DefaultInterpretersTable() Interpreters {
	t, _ := NewInterpreters(nil)
	return t
}
