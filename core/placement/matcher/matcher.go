// Package matcher decides whether a worker's capabilities satisfy a task's
// placement and ranks the workers that do.
//
// It is the only placement code that parses semantic versions
// (Masterminds/semver), so the worker, which links package placement, does
// not link it. The control plane compiles a task's Requirements once and
// matches many candidate sessions against the compiled form.
//
// A mismatch is reported as one low-cardinality Category word, never the
// values involved: results end up in metrics and run events, and label
// values or versions there would both explode cardinality and leak fleet
// details into places with weaker access control.
package matcher

import (
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

// Mismatch categories. The order of checks is fixed (os, arch, executor,
// runtimes, label, feature), so a worker that fails several conditions
// always reports the same category.
const (
	CategoryOS                = "os"
	CategoryArch              = "arch"
	CategoryExecutor          = "executor"
	CategoryRuntimeMissing    = "runtime_missing"
	CategoryRuntimeVersion    = "runtime_version"
	CategoryLabel             = "label"
	CategoryFeature           = "feature"
	CategoryCapabilityInvalid = "capability_invalid" // a required runtime's version does not parse
)

// Result of matching one worker. Score is meaningful only when OK: the sum
// of the weights of the preferences the worker's labels satisfy (0..1600).
// Category is empty when OK.
type Result struct {
	OK       bool
	Score    int
	Category string
}

// Matcher is a compiled Requirements. It is immutable and safe for
// concurrent use.
type Matcher struct {
	os, arch  string
	executors []string
	system    bool                 // requires a system executor
	runtimes  []runtimeRequirement // sorted by name
	labels    []labelRequirement   // sorted by key
	features  []string
	preferred []placement.Preference
}

type runtimeRequirement struct {
	name       string
	constraint *semver.Constraints
}

type labelRequirement struct{ key, value string }

// fieldPrefix is where Requirements sit inside a task spec; Compile names
// fields as the user wrote them there.
const fieldPrefix = "placement"

// Compile validates r (structurally and its semver constraints) and
// returns its matcher. Errors name the field as it appears in a task spec,
// e.g. "placement.required.runtimes.python".
func Compile(r placement.Requirements) (*Matcher, error) {
	if err := r.Validate(); err != nil {
		return nil, errs.Prefix(fieldPrefix, err)
	}
	r = r.Normalize()
	m := &Matcher{
		os:        r.Required.OS,
		arch:      r.Required.Arch,
		executors: r.Required.Executors,
		system:    r.Required.System(),
		features:  r.Required.Features,
		preferred: r.Preferred,
	}
	for _, name := range sortedKeys(r.Required.Runtimes) {
		expr := r.Required.Runtimes[name]
		c, err := semver.NewConstraint(expr)
		if err != nil {
			return nil, errs.Invalidf(fieldPrefix+".required.runtimes."+name,
				"constraint %q is not a semver range (e.g. \">=3.9\", \"^20 || ^22\"): %v", expr, err)
		}
		m.runtimes = append(m.runtimes, runtimeRequirement{name: name, constraint: c})
	}
	for _, k := range sortedKeys(r.Required.Labels) {
		m.labels = append(m.labels, labelRequirement{key: k, value: r.Required.Labels[k]})
	}
	return m, nil
}

// Match checks c against the requirements, parsing the versions of the
// runtimes the requirements name. For many matches against the same
// capabilities use Prepare and MatchPrepared, which parse once.
func (m *Matcher) Match(c placement.Capabilities) Result {
	return m.match(&c, func(name, version string) (*semver.Version, bool) {
		v, err := semver.NewVersion(version)
		return v, err == nil
	})
}

// MatchPrepared is Match against capabilities whose versions were parsed by
// Prepare. It does not allocate.
func (m *Matcher) MatchPrepared(p *Prepared) Result {
	return m.match(&p.caps, func(name, _ string) (*semver.Version, bool) {
		v := p.versions[name]
		return v, v != nil
	})
}

func (m *Matcher) match(c *placement.Capabilities, version func(name, raw string) (*semver.Version, bool)) Result {
	// A system executor (placement.SystemExecutorPrefix) takes only the
	// Runs that require one (ADR 0061).
	if c.System() && !m.system {
		return mismatch(CategoryExecutor)
	}
	if m.os != "" && c.OS != m.os {
		return mismatch(CategoryOS)
	}
	if m.arch != "" && c.Arch != m.arch {
		return mismatch(CategoryArch)
	}
	for _, e := range m.executors {
		if !slices.Contains(c.Executors, e) {
			return mismatch(CategoryExecutor)
		}
	}
	for _, rr := range m.runtimes {
		raw, ok := c.Runtimes[rr.name]
		if !ok {
			return mismatch(CategoryRuntimeMissing)
		}
		v, ok := version(rr.name, raw)
		if !ok {
			return mismatch(CategoryCapabilityInvalid)
		}
		if !rr.constraint.Check(v) {
			return mismatch(CategoryRuntimeVersion)
		}
	}
	for _, l := range m.labels {
		if v, ok := c.Labels[l.key]; !ok || v != l.value {
			return mismatch(CategoryLabel)
		}
	}
	for _, f := range m.features {
		if !slices.Contains(c.Features, f) {
			return mismatch(CategoryFeature)
		}
	}
	score := 0
	for _, p := range m.preferred {
		if v, ok := c.Labels[p.Label]; ok && v == p.Value {
			score += p.Weight
		}
	}
	return Result{OK: true, Score: score}
}

func mismatch(category string) Result { return Result{Category: category} }

// System reports whether the requirements name a system executor.
func (m *Matcher) System() bool { return m.system }

// System reports whether the capabilities advertise a system executor:
// such a session qualifies for no Run without placement (ADR 0061).
func (p *Prepared) System() bool { return p.caps.System() }

// Prepared is a worker's capabilities with runtime versions parsed, built
// once per session registration and matched against many tasks.
type Prepared struct {
	caps     placement.Capabilities
	versions map[string]*semver.Version
}

// Prepare validates c (see ValidateCapabilities) and parses its versions.
func Prepare(c placement.Capabilities) (*Prepared, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Prepared{caps: c.Normalize(), versions: make(map[string]*semver.Version, len(c.Runtimes))}
	for _, name := range sortedKeys(c.Runtimes) {
		v, err := parseVersion(name, c.Runtimes[name])
		if err != nil {
			return nil, err
		}
		p.versions[name] = v
	}
	return p, nil
}

// ValidateCapabilities checks c structurally and that every runtime version
// is a semantic version (loose: "3.11", "v20.1.0" and "3.11.4" parse). The
// control plane calls it when a session registers, so a worker with an
// unparsable version is refused up front instead of never matching.
func ValidateCapabilities(c placement.Capabilities) error {
	_, err := Prepare(c)
	return err
}

func parseVersion(name, raw string) (*semver.Version, error) {
	v, err := semver.NewVersion(raw)
	if err != nil {
		return nil, errs.Invalidf("runtimes."+name, "version %.64q is not a semantic version: %v", raw, err)
	}
	return v, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	return keys
}
