package qlimport

import (
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/ql3/ql3/core/env"
)

// Env limits of ql3's store (core/env, DESIGN.md §8).
const (
	MaxEnvValueBytes  = env.MaxValueBytes
	MaxEnvJoinedBytes = env.MaxJoinedBytes
)

// EnvPlan is what one Envs row becomes: a separate ql3 entry (so several
// enabled rows of one name still join with '&' to the value QingLong
// exported). Values are never in the plan; the digest binds them.
type EnvPlan struct {
	SourceID   int64    `json:"sourceId"`
	Class      Class    `json:"class"`
	Reasons    []string `json:"reasons,omitempty"`
	Name       string   `json:"name"`
	Remarks    string   `json:"remarks,omitempty"`
	Enabled    bool     `json:"enabled"`
	Pinned     bool     `json:"pinned"`
	Rank       int      `json:"rank"` // 0 = first in QingLong's order among rows of this name
	Labels     []string `json:"labels,omitempty"`
	ValueBytes int      `json:"valueBytes"`
}

// Created reports whether apply creates the entry.
func (e EnvPlan) Created() bool { return e.Class == Lossless }

// posixName is a name a shell can export; QingLong skipped others when it
// wrote the environment, so no task ever saw them.
var posixName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// planEnvs ranks the rows of each name in QingLong's order (pinned first,
// then position descending, then created ascending, then id) and
// classifies them.
func planEnvs(rows []Env) []EnvPlan {
	rows = append([]Env(nil), rows...)
	sort.SliceStable(rows, func(i, j int) bool { return qlBefore(rows[i], rows[j]) })
	rank := map[string]int{}
	joined := map[string]int{} // bytes of the enabled join per name
	for _, r := range rows {
		if !r.Disabled {
			if joined[r.Name] > 0 {
				joined[r.Name]++ // the '&'
			}
			joined[r.Name] += len(r.Value)
		}
	}
	out := make([]EnvPlan, 0, len(rows))
	for _, r := range rows {
		p := EnvPlan{SourceID: r.ID, Name: r.Name, Remarks: r.Remarks, Enabled: !r.Disabled, Pinned: r.Pinned,
			Rank: rank[r.Name], ValueBytes: len(r.Value)}
		rank[r.Name]++
		v := verdict{class: Lossless}
		switch {
		case !posixName.MatchString(r.Name):
			v.add(RequiresManual, "name %q is not a shell variable name: QingLong never exported it", r.Name)
		case strings.HasPrefix(strings.ToUpper(r.Name), "QL3_"):
			v.add(RequiresManual, "names starting with QL3_ are reserved for ql3")
		default:
			if err := env.ValidateName(r.Name); err != nil {
				v.add(RequiresManual, "%v", err)
			}
		}
		if err := env.ValidateRemarks(r.Remarks); err != nil {
			v.add(RequiresManual, "%v", err)
		}
		if err := env.ValidateLabels(r.Labels); err != nil {
			v.add(RequiresManual, "%v", err)
		}
		switch {
		case strings.IndexByte(r.Value, 0) >= 0:
			v.add(RequiresManual, "value contains NUL, which no process environment can hold")
		case env.ValidateValue(r.Value) != nil:
			v.add(RequiresManual, "%v", env.ValidateValue(r.Value))
		case !r.Disabled && joined[r.Name] > MaxEnvJoinedBytes:
			v.add(RequiresManual, "the enabled values of %s join to %d bytes, limit is %d", r.Name, joined[r.Name], MaxEnvJoinedBytes)
		case !r.Disabled && strings.TrimFunc(r.Value, unicode.IsSpace) != r.Value:
			// QingLong trimmed the joined value for shell scripts but not
			// for Node or Python: no single value reproduces both.
			v.add(RequiresManual, "value has white space at an end: QingLong exported it trimmed to shell scripts and untrimmed to Node and Python")
		}
		for i, l := range r.Labels {
			if i >= MaxLabels {
				v.add(RequiresManual, "more than %d labels", MaxLabels)
				break
			}
			p.Labels = append(p.Labels, l)
		}
		p.Class, p.Reasons = v.class, v.reasons
		out = append(out, p)
	}
	return out
}

// qlBefore is QingLong's export order.
func qlBefore(a, b Env) bool {
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	if a.Pinned != b.Pinned {
		return a.Pinned
	}
	if a.Position != b.Position {
		return a.Position > b.Position
	}
	if a.CreatedAtMs != b.CreatedAtMs {
		return a.CreatedAtMs < b.CreatedAtMs
	}
	return a.ID < b.ID
}

// JoinedValues is the environment QingLong exported to every task from
// rows: enabled rows of each exportable name joined with '&' in its order.
// Tests compare it with what an imported task's process sees.
func JoinedValues(rows []Env) map[string]string {
	rows = append([]Env(nil), rows...)
	sort.SliceStable(rows, func(i, j int) bool { return qlBefore(rows[i], rows[j]) })
	out := map[string]string{}
	for _, r := range rows {
		if r.Disabled || !posixName.MatchString(r.Name) {
			continue
		}
		if prev, ok := out[r.Name]; ok {
			out[r.Name] = prev + "&" + r.Value
		} else {
			out[r.Name] = r.Value
		}
	}
	return out
}

// EnvDraft is a config.sh assignment offered as an env entry; apply adds
// drafts only when asked to.
type EnvDraft struct {
	Line       int      `json:"line"`
	Name       string   `json:"name"`
	Class      Class    `json:"class"`
	Reasons    []string `json:"reasons,omitempty"`
	ValueBytes int      `json:"valueBytes"`
}

func planDrafts(exports []ConfigExport) []EnvDraft {
	out := make([]EnvDraft, 0, len(exports))
	for _, e := range exports {
		d := EnvDraft{Line: e.Line, Name: e.Name, ValueBytes: len(e.Value)}
		v := verdict{class: Lossless}
		switch {
		case !posixName.MatchString(e.Name):
			v.add(RequiresManual, "name %q is not a shell variable name", e.Name)
		case strings.HasPrefix(strings.ToUpper(e.Name), "QL3_"):
			v.add(RequiresManual, "names starting with QL3_ are reserved for ql3")
		case env.ValidateValue(e.Value) != nil:
			v.add(RequiresManual, "%v", env.ValidateValue(e.Value))
		}
		d.Class, d.Reasons = v.class, v.reasons
		out = append(out, d)
	}
	return out
}

// ParseConfigExports reads the simple assignments of a config.sh without
// executing anything: lines `export NAME="value"`, `export NAME='value'`
// or `export NAME=value` (no expansion, no command substitution, nothing
// after the value but a comment). Anything else is ignored and counted.
func ParseConfigExports(text string) (exports []ConfigExport, ignored int) {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimRight(line, "\r"))
		rest, ok := strings.CutPrefix(line, "export ")
		if !ok {
			if line != "" && !strings.HasPrefix(line, "#") {
				ignored++
			}
			continue
		}
		name, raw, ok := strings.Cut(strings.TrimSpace(rest), "=")
		if !ok || !posixName.MatchString(name) {
			ignored++
			continue
		}
		value, ok := simpleValue(raw)
		if !ok {
			ignored++
			continue
		}
		exports = append(exports, ConfigExport{Line: i + 1, Name: name, Value: value})
	}
	return exports, ignored
}

// simpleValue reads a literal shell word: single-quoted (anything but a
// quote), double-quoted without $, ` or \, or bare without shell
// characters; optionally followed by a comment.
func simpleValue(raw string) (string, bool) {
	var value, tail string
	switch {
	case strings.HasPrefix(raw, "'"):
		end := strings.IndexByte(raw[1:], '\'')
		if end < 0 {
			return "", false
		}
		value, tail = raw[1:1+end], raw[2+end:]
	case strings.HasPrefix(raw, `"`):
		end := strings.IndexByte(raw[1:], '"')
		if end < 0 {
			return "", false
		}
		value, tail = raw[1:1+end], raw[2+end:]
		if strings.ContainsAny(value, "$`\\") {
			return "", false
		}
	default:
		end := strings.IndexAny(raw, " \t")
		if end < 0 {
			end = len(raw)
		}
		value, tail = raw[:end], raw[end:]
		if strings.ContainsAny(value, "$`\\\"'();&|<>*?[]{}~") {
			return "", false
		}
	}
	tail = strings.TrimSpace(tail)
	if tail != "" && !strings.HasPrefix(tail, "#") {
		return "", false
	}
	return value, true
}
