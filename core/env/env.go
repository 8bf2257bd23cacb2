// Package env is the shared environment-variable store the QingLong way:
// entries of name / value / remarks / enabled / position / pinned /
// labels, of which every enabled one is exported to a task's process; the
// enabled entries of one name are joined with "&" (one account per part),
// in QingLong's order: pinned first, then higher position, then older,
// then smaller id.
//
// The package is pure (no clock, no I/O): validation with the hard limits,
// the join (Resolve), a task's view (Compose, from the spec's env scope and
// its inline environment), the secrets a Run's output is masked with
// (Secrets), reordering (MoveBefore) and the NAME=value line format
// (ParseLines, FormatLines). Both binaries use it; the worker links it.
//
// Limit errors are errs.Invalid (HTTP 400) naming the field and the limit.
package env

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
)

// Hard limits (design §8).
const (
	MaxEntries      = 10_000    // entries in one store
	MaxValueBytes   = 128 << 10 // one value: the kernel's limit for one environment string
	MaxJoinedBytes  = 128 << 10 // one joined variable, NAME= not counted
	MaxProcessBytes = 1 << 20   // everything one process gets from the store and the task (NAME=value\0 each)
	MaxNameBytes    = 256
	MaxRemarksBytes = 1024
	MaxLabels       = 16
	MaxLabelBytes   = 64
	// MinMaskBytes: a part of a joined value ("a&b") shorter than this is
	// not masked on its own; nor is a whole value shorter than this (a
	// one-letter flag would turn every log into asterisks).
	MinMaskBytes = 4
	// ReservedPrefix is ql3's own (QL3_RUN_ID …), refused in any case.
	ReservedPrefix = "QL3_"
	// Separator joins the enabled values of one name.
	Separator = "&"
)

// Entry is one row of the store. Value is the plaintext: it exists only in
// memory (and in the processes that get it); stores keep ciphertext.
type Entry struct {
	ID          string
	Name        string
	Value       string
	Remarks     string
	Enabled     bool
	Position    int64 // higher sorts first within the same pinned state
	Pinned      bool
	Labels      []string
	CreatedAtMs int64
	UpdatedAtMs int64
}

// Compare orders entries the QingLong way: pinned desc, position desc,
// created asc, id asc. It is the order of a list and of a join.
func Compare(a, b Entry) int {
	if a.Pinned != b.Pinned {
		if a.Pinned {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(b.Position, a.Position), cmp.Compare(a.CreatedAtMs, b.CreatedAtMs), strings.Compare(a.ID, b.ID))
}

// ValidateName checks a variable name: a POSIX name ([A-Za-z_][A-Za-z0-9_]*,
// so no "=" and no NUL), at most MaxNameBytes, not in the reserved QL3_
// namespace (in any letter case).
func ValidateName(name string) error {
	switch {
	case name == "":
		return errs.Invalidf("name", "is required")
	case len(name) > MaxNameBytes:
		return errs.Invalidf("name", "is %d bytes, limit is %d", len(name), MaxNameBytes)
	case strings.IndexByte(name, 0) >= 0:
		return errs.Invalidf("name", "contains a NUL byte")
	case strings.IndexByte(name, '=') >= 0:
		return errs.Invalidf("name", "must not contain '=' (a variable name ends at the first '=')")
	case !validName(name):
		return errs.Invalidf("name", "%.64q must match [A-Za-z_][A-Za-z0-9_]*", name)
	case len(name) >= len(ReservedPrefix) && strings.EqualFold(name[:len(ReservedPrefix)], ReservedPrefix):
		return errs.Invalidf("name", "the %s prefix is reserved for variables ql3 sets", ReservedPrefix)
	}
	return nil
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || ('A' <= c && c <= 'Z') || ('a' <= c && c <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// ValidateValue checks one value: at most MaxValueBytes, no NUL (it would
// end the environment string), valid UTF-8 (values travel as JSON).
func ValidateValue(v string) error {
	switch {
	case len(v) > MaxValueBytes:
		return errs.Invalidf("value", "is %d bytes, limit is %d (128 KiB)", len(v), MaxValueBytes)
	case strings.IndexByte(v, 0) >= 0:
		return errs.Invalidf("value", "contains a NUL byte at %d; environment values cannot hold one", strings.IndexByte(v, 0))
	case !utf8.ValidString(v):
		return errs.Invalidf("value", "is not valid UTF-8")
	}
	return nil
}

// ValidateRemarks checks free text shown next to an entry.
func ValidateRemarks(r string) error {
	if len(r) > MaxRemarksBytes {
		return errs.Invalidf("remarks", "is %d bytes, limit is %d", len(r), MaxRemarksBytes)
	}
	if !utf8.ValidString(r) || strings.ContainsAny(r, "\x00\r\n") {
		return errs.Invalidf("remarks", "must be one line of valid UTF-8")
	}
	return nil
}

// ValidateLabels checks an entry's labels: at most MaxLabels, each 1..64
// bytes of printable characters without commas, no duplicates.
func ValidateLabels(labels []string) error {
	if len(labels) > MaxLabels {
		return errs.Invalidf("labels", "has %d labels, limit is %d", len(labels), MaxLabels)
	}
	for i, l := range labels {
		if l == "" || len(l) > MaxLabelBytes || !utf8.ValidString(l) || strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ',' }) {
			return errs.Invalidf("labels", "label %d must be 1..%d bytes of printable UTF-8 without commas", i, MaxLabelBytes)
		}
		if slices.Contains(labels[:i], l) {
			return errs.Invalidf("labels", "label %.64q appears twice", l)
		}
	}
	return nil
}

// Validate checks every user-supplied field of e.
func (e Entry) Validate() error {
	if err := ValidateName(e.Name); err != nil {
		return err
	}
	if err := ValidateValue(e.Value); err != nil {
		return err
	}
	if err := ValidateRemarks(e.Remarks); err != nil {
		return err
	}
	return ValidateLabels(e.Labels)
}

// Size is what the joined limits need of an enabled entry: no value, so a
// store can check them on lengths it keeps next to the ciphertext.
type Size struct {
	Name       string
	ValueBytes int
}

// CheckSizes checks the joined limits over the enabled entries of a store:
// each name's joined value ≤ MaxJoinedBytes, and all of them together (as
// NAME=value strings) ≤ MaxProcessBytes, so the default scope (every task
// sees every enabled entry) always fits a process.
func CheckSizes(enabled []Size) error {
	joined := make(map[string]int, len(enabled))
	for _, s := range enabled {
		if n, ok := joined[s.Name]; ok {
			joined[s.Name] = n + len(Separator) + s.ValueBytes
		} else {
			joined[s.Name] = s.ValueBytes
		}
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(joined)) {
		n := joined[name]
		if n > MaxJoinedBytes {
			return errs.Invalidf("value", "the enabled entries named %s join to %d bytes, limit is %d (128 KiB) for one variable", name, n, MaxJoinedBytes)
		}
		total += len(name) + 1 + n + 1
	}
	if total > MaxProcessBytes {
		return errs.Invalidf("value", "the enabled entries give a process %d bytes of environment, limit is %d (1 MiB)", total, MaxProcessBytes)
	}
	return nil
}

// Variable is one joined variable a process sees.
type Variable struct {
	Name  string
	Value string
}

// Resolve joins the enabled entries by name in QingLong order and returns
// the variables sorted by name. Disabled entries are left out. The limits
// of CheckSizes apply.
func Resolve(entries []Entry) ([]Variable, error) {
	enabled := make([]Entry, 0, len(entries))
	sizes := make([]Size, 0, len(entries))
	for _, e := range entries {
		if e.Enabled {
			enabled = append(enabled, e)
			sizes = append(sizes, Size{Name: e.Name, ValueBytes: len(e.Value)})
		}
	}
	if err := CheckSizes(sizes); err != nil {
		return nil, err
	}
	slices.SortStableFunc(enabled, func(a, b Entry) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), Compare(a, b))
	})
	var out []Variable
	var b strings.Builder
	for i := 0; i < len(enabled); {
		j := i
		b.Reset()
		for ; j < len(enabled) && enabled[j].Name == enabled[i].Name; j++ {
			if j > i {
				b.WriteString(Separator)
			}
			b.WriteString(enabled[j].Value)
		}
		out = append(out, Variable{Name: enabled[i].Name, Value: b.String()})
		i = j
	}
	return out, nil
}

// Secrets lists what a Run's output is masked with: every enabled value,
// each "&"-separated part of one and each joined variable, all only from
// MinMaskBytes bytes. Duplicates are left to the matcher.
func Secrets(entries []Entry) [][]byte {
	var out [][]byte
	byName := make(map[string][]Entry)
	for _, e := range entries {
		if e.Enabled {
			byName[e.Name] = append(byName[e.Name], e)
		}
	}
	for _, group := range byName {
		if len(group) < 2 {
			continue
		}
		slices.SortFunc(group, Compare)
		parts := make([]string, len(group))
		for i, e := range group {
			parts[i] = e.Value
		}
		if joined := strings.Join(parts, Separator); len(joined) >= MinMaskBytes {
			out = append(out, []byte(joined))
		}
	}
	for _, e := range entries {
		if !e.Enabled {
			continue
		}
		if len(e.Value) >= MinMaskBytes {
			out = append(out, []byte(e.Value))
		}
		if !strings.Contains(e.Value, Separator) {
			continue
		}
		for part := range strings.SplitSeq(e.Value, Separator) {
			if len(part) >= MinMaskBytes {
				out = append(out, []byte(part))
			}
		}
	}
	return out
}

// SecretsOfVariables is Secrets for a process that only has its joined
// variables (a remote worker gets the values a Run needs, not the store):
// each value and each "&"-part, from MinMaskBytes bytes.
func SecretsOfVariables(vars []Variable) [][]byte {
	var out [][]byte
	for _, v := range vars {
		if len(v.Value) >= MinMaskBytes {
			out = append(out, []byte(v.Value))
		}
		if !strings.Contains(v.Value, Separator) {
			continue
		}
		for part := range strings.SplitSeq(v.Value, Separator) {
			if len(part) >= MinMaskBytes {
				out = append(out, []byte(part))
			}
		}
	}
	return out
}
