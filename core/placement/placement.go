// Package placement describes where a task may run: what a worker offers
// (Capabilities) and what a task asks for (Requirements).
//
// This package is data and structural validation only, so the worker can
// link it without pulling in a semver implementation: runtime versions and
// version constraints are bounded strings here, and package
// placement/matcher parses them and decides whether a worker fits.
//
// Sets (executors, features) have no order: their canonical form is sorted
// and deduplicated, so two workers reporting the same set in a different
// order publish the same capabilities digest.
package placement

import (
	"fmt"
	"slices"
	"sort"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// Limits of a capabilities document and of the names in it.
const (
	MaxCapabilitiesBytes = 16 << 10 // canonical and received JSON
	MaxNameLen           = 63       // executor, feature, runtime and label names
	MaxLabelValueLen     = 63
	MaxOSArchLen         = 32
	MaxVersionLen        = 64  // runtime version strings
	MaxConstraintLen     = 128 // runtime version constraint strings
	MaxExecutors         = 16
	MaxRuntimes          = 64
	MaxLabels            = 64
	MaxFeatures          = 64
	MaxPreferred         = 16
	MinWeight            = 1
	MaxWeight            = 100
	MaxSizeMiB           = 1 << 40 // memoryMiB / diskMiB: 1 EiB, far beyond any machine
)

// CapabilitiesDigestDomain separates capability digests from every other
// digest ql3 computes (see canonjson.Sum).
const CapabilitiesDigestDomain = "ql3/capabilities/v1"

// capabilitiesLimits bound the JSON a worker sends. Depth 2: the document
// and its maps/lists. 64 entries covers the largest set.
var capabilitiesLimits = canonjson.Limits{
	MaxBytes:   MaxCapabilitiesBytes,
	MaxDepth:   2,
	MaxEntries: MaxRuntimes,
	MaxString:  MaxConstraintLen,
}

// Capabilities is what one worker session offers.
type Capabilities struct {
	OS        string            `json:"os"`                  // GOOS, e.g. "linux"
	Arch      string            `json:"arch"`                // GOARCH, e.g. "arm64"
	Executors []string          `json:"executors,omitempty"` // e.g. "argv", "shell"
	Runtimes  map[string]string `json:"runtimes,omitempty"`  // name → version, e.g. "python": "3.11.4"
	Labels    map[string]string `json:"labels,omitempty"`    // operator-assigned, e.g. "zone": "cn-east-1"
	Features  []string          `json:"features,omitempty"`  // e.g. "gpu", "armv7"
	MemoryMiB int64             `json:"memoryMiB,omitempty"`
	DiskMiB   int64             `json:"diskMiB,omitempty"`
}

// DecodeCapabilities strictly decodes and validates a capabilities document
// and returns it normalized (sets sorted and deduplicated).
func DecodeCapabilities(data []byte) (Capabilities, error) {
	var c Capabilities
	if err := canonjson.DecodeStrict(data, capabilitiesLimits, &c); err != nil {
		return Capabilities{}, err
	}
	c = c.Normalize()
	if err := c.Validate(); err != nil {
		return Capabilities{}, err
	}
	return c, nil
}

// Normalize returns a copy with sets sorted and deduplicated and empty
// collections set to nil. It does not validate.
func (c Capabilities) Normalize() Capabilities {
	c.Executors = normalizeSet(c.Executors)
	c.Features = normalizeSet(c.Features)
	c.Runtimes = cloneMap(c.Runtimes)
	c.Labels = cloneMap(c.Labels)
	return c
}

// Validate checks c structurally. Runtime versions are checked only as
// bounded strings; matcher.ValidateCapabilities also parses them.
func (c Capabilities) Validate() error {
	if err := checkOSArch("os", c.OS, true); err != nil {
		return err
	}
	if err := checkOSArch("arch", c.Arch, true); err != nil {
		return err
	}
	if err := checkNameList("executors", c.Executors, MaxExecutors); err != nil {
		return err
	}
	if len(c.Runtimes) > MaxRuntimes {
		return errs.TooLargef("runtimes", "has %d entries, limit is %d", len(c.Runtimes), MaxRuntimes)
	}
	for _, name := range sortedKeys(c.Runtimes) {
		if err := checkName("runtimes", name); err != nil {
			return err
		}
		if err := checkVersion("runtimes."+name, c.Runtimes[name]); err != nil {
			return err
		}
	}
	if err := checkLabels("labels", c.Labels, MaxLabels); err != nil {
		return err
	}
	if err := checkNameList("features", c.Features, MaxFeatures); err != nil {
		return err
	}
	if c.MemoryMiB < 0 || c.MemoryMiB > MaxSizeMiB {
		return errs.Invalidf("memoryMiB", "must be 0..%d, got %d", int64(MaxSizeMiB), c.MemoryMiB)
	}
	if c.DiskMiB < 0 || c.DiskMiB > MaxSizeMiB {
		return errs.Invalidf("diskMiB", "must be 0..%d, got %d", int64(MaxSizeMiB), c.DiskMiB)
	}
	return nil
}

// Canonical returns the canonical JSON of the normalized capabilities.
func (c Capabilities) Canonical() ([]byte, error) {
	n := c.Normalize()
	if err := n.Validate(); err != nil {
		return nil, err
	}
	out, err := canonjson.Canonical(n)
	if err != nil {
		return nil, errs.E(errs.Internal, "", "encode capabilities: %v", err)
	}
	if len(out) > MaxCapabilitiesBytes {
		return nil, errs.TooLargef("", "canonical capabilities are %d bytes, limit is %d", len(out), MaxCapabilitiesBytes)
	}
	return out, nil
}

// Digest is the SHA-256 of the canonical form under CapabilitiesDigestDomain.
func (c Capabilities) Digest() (canonjson.Digest, error) {
	b, err := c.Canonical()
	if err != nil {
		return canonjson.Digest{}, err
	}
	return canonjson.Sum(CapabilitiesDigestDomain, b), nil
}

// Requirements is a task's placement: every Required condition must hold;
// Preferred conditions only rank the workers that qualify.
type Requirements struct {
	Required  Required     `json:"required"`
	Preferred []Preference `json:"preferred,omitempty"`
}

// Required conditions. Empty fields impose nothing.
type Required struct {
	OS        string            `json:"os,omitempty"`
	Arch      string            `json:"arch,omitempty"`
	Executors []string          `json:"executors,omitempty"` // all must be offered
	Runtimes  map[string]string `json:"runtimes,omitempty"`  // name → semver constraint, e.g. ">=3.9"
	Labels    map[string]string `json:"labels,omitempty"`    // exact match
	Features  []string          `json:"features,omitempty"`  // all must be offered
}

// Preference adds Weight to a qualifying worker's score when its label
// Label has exactly Value.
type Preference struct {
	Label  string `json:"label"`
	Value  string `json:"value"`
	Weight int    `json:"weight"`
}

// IsZero reports whether r imposes and prefers nothing (after Normalize it
// is then equivalent to no placement at all).
func (r Requirements) IsZero() bool {
	q := r.Required
	return q.OS == "" && q.Arch == "" && len(q.Executors) == 0 && len(q.Runtimes) == 0 &&
		len(q.Labels) == 0 && len(q.Features) == 0 && len(r.Preferred) == 0
}

// Normalize returns a copy with sets sorted and deduplicated, preferences
// sorted by (label, value, weight) — the score is a sum, so order carries
// no meaning — and empty collections set to nil. It does not validate.
func (r Requirements) Normalize() Requirements {
	r.Required.Executors = normalizeSet(r.Required.Executors)
	r.Required.Features = normalizeSet(r.Required.Features)
	r.Required.Runtimes = cloneMap(r.Required.Runtimes)
	r.Required.Labels = cloneMap(r.Required.Labels)
	if len(r.Preferred) == 0 {
		r.Preferred = nil
	} else {
		r.Preferred = slices.Clone(r.Preferred)
		// sort.Slice, not slices.SortFunc: a generic sort is instantiated
		// per element shape (~25 KB of code each in the mipsle worker,
		// whose size is capped); sort.Slice's code is shared by every use.
		p := r.Preferred
		sort.Slice(p, func(i, j int) bool {
			if p[i].Label != p[j].Label {
				return p[i].Label < p[j].Label
			}
			if p[i].Value != p[j].Value {
				return p[i].Value < p[j].Value
			}
			return p[i].Weight < p[j].Weight
		})
	}
	return r
}

// Validate checks r structurally; fields are relative ("required.os").
// Constraint strings are only bounded here; matcher.Compile parses them.
func (r Requirements) Validate() error {
	q := r.Required
	if err := checkOSArch("required.os", q.OS, false); err != nil {
		return err
	}
	if err := checkOSArch("required.arch", q.Arch, false); err != nil {
		return err
	}
	if err := checkNameList("required.executors", q.Executors, MaxExecutors); err != nil {
		return err
	}
	if len(q.Runtimes) > MaxRuntimes {
		return errs.TooLargef("required.runtimes", "has %d entries, limit is %d", len(q.Runtimes), MaxRuntimes)
	}
	for _, name := range sortedKeys(q.Runtimes) {
		if err := checkName("required.runtimes", name); err != nil {
			return err
		}
		if err := checkConstraint("required.runtimes."+name, q.Runtimes[name]); err != nil {
			return err
		}
	}
	if err := checkLabels("required.labels", q.Labels, MaxLabels); err != nil {
		return err
	}
	if err := checkNameList("required.features", q.Features, MaxFeatures); err != nil {
		return err
	}
	if len(r.Preferred) > MaxPreferred {
		return errs.TooLargef("preferred", "has %d entries, limit is %d", len(r.Preferred), MaxPreferred)
	}
	seen := make(map[[2]string]struct{}, len(r.Preferred))
	for i, p := range r.Preferred {
		field := fmt.Sprintf("preferred[%d]", i)
		if err := checkName(field+".label", p.Label); err != nil {
			return err
		}
		if err := checkLabelValue(field+".value", p.Value); err != nil {
			return err
		}
		if p.Weight < MinWeight || p.Weight > MaxWeight {
			return errs.Invalidf(field+".weight", "must be %d..%d, got %d", MinWeight, MaxWeight, p.Weight)
		}
		k := [2]string{p.Label, p.Value}
		if _, dup := seen[k]; dup {
			return errs.Invalidf(field, "duplicate preference for label %q value %q", p.Label, p.Value)
		}
		seen[k] = struct{}{}
	}
	return nil
}
