package placement

import (
	"maps"
	"slices"
	"strconv"

	"github.com/ql3/ql3/core/errs"
)

// Names (executors, features, runtime names, label keys) are short,
// lower-case and free of anything a shell, a URL or a log line would
// misread: [a-z0-9][-a-z0-9_./]*, at most MaxNameLen bytes.
func validName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || !lowerAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !lowerAlnum(c) && c != '-' && c != '_' && c != '.' && c != '/' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }

// checkName reports an invalid name in field. The name is quoted in the
// message, truncated, never used as a field path.
func checkName(field, name string) error {
	if !validName(name) {
		return errs.Invalidf(field, "name %.64q must match [a-z0-9][-a-z0-9_./]* and be at most %d bytes", name, MaxNameLen)
	}
	return nil
}

func checkNameList(field string, names []string, limit int) error {
	if len(names) > limit {
		return errs.TooLargef(field, "has %d entries, limit is %d", len(names), limit)
	}
	for i, n := range names {
		if err := checkName(field+"["+strconv.Itoa(i)+"]", n); err != nil {
			return err
		}
	}
	return nil
}

// os and arch are Go's GOOS/GOARCH spellings: [a-z0-9]+.
func checkOSArch(field, s string, required bool) error {
	if s == "" {
		if required {
			return errs.Invalidf(field, "is required")
		}
		return nil
	}
	if len(s) > MaxOSArchLen {
		return errs.Invalidf(field, "is %d bytes, limit is %d", len(s), MaxOSArchLen)
	}
	for i := 0; i < len(s); i++ {
		if !lowerAlnum(s[i]) {
			return errs.Invalidf(field, "%.40q must match [a-z0-9]+", s)
		}
	}
	return nil
}

// Label values: empty, or up to MaxLabelValueLen bytes of [A-Za-z0-9._:/+-].
func checkLabelValue(field, v string) error {
	if len(v) > MaxLabelValueLen {
		return errs.Invalidf(field, "is %d bytes, limit is %d", len(v), MaxLabelValueLen)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !lowerAlnum(c) && !('A' <= c && c <= 'Z') && !isAnyOf(c, "._:/+-") {
			return errs.Invalidf(field, "%.64q must consist of [A-Za-z0-9._:/+-]", v)
		}
	}
	return nil
}

func checkLabels(field string, labels map[string]string, limit int) error {
	if len(labels) > limit {
		return errs.TooLargef(field, "has %d entries, limit is %d", len(labels), limit)
	}
	for _, k := range sortedKeys(labels) {
		if err := checkName(field, k); err != nil {
			return err
		}
		if err := checkLabelValue(field+"."+k, labels[k]); err != nil {
			return err
		}
	}
	return nil
}

// Versions are bounded strings of semver characters; matcher parses them.
func checkVersion(field, v string) error {
	if v == "" {
		return errs.Invalidf(field, "version is required")
	}
	if len(v) > MaxVersionLen {
		return errs.Invalidf(field, "version is %d bytes, limit is %d", len(v), MaxVersionLen)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !lowerAlnum(c) && !('A' <= c && c <= 'Z') && !isAnyOf(c, ".+-") {
			return errs.Invalidf(field, "version %.64q must consist of [0-9A-Za-z.+-]", v)
		}
	}
	return nil
}

// Constraints are bounded, non-empty printable ASCII (">=3.9 <4", "~1.2 || ^2");
// matcher parses them.
func checkConstraint(field, c string) error {
	if c == "" {
		return errs.Invalidf(field, "constraint is required")
	}
	if len(c) > MaxConstraintLen {
		return errs.Invalidf(field, "constraint is %d bytes, limit is %d", len(c), MaxConstraintLen)
	}
	for i := 0; i < len(c); i++ {
		if c[i] < 0x20 || c[i] > 0x7e {
			return errs.Invalidf(field, "constraint must be printable ASCII")
		}
	}
	return nil
}

func isAnyOf(c byte, set string) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == c {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// normalizeSet sorts and deduplicates a copy of s; empty becomes nil.
func normalizeSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// cloneMap copies m so a normalized value shares nothing with its source;
// empty becomes nil.
func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
