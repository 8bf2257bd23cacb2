package matcher

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

type matchCase struct {
	Name         string                 `json:"name"`
	Requirements placement.Requirements `json:"requirements"`
	Capabilities placement.Capabilities `json:"capabilities"`
	// InvalidCapabilities: a runtime version does not parse, so Prepare
	// (and session registration) refuses these capabilities; Match still
	// answers for them.
	InvalidCapabilities bool `json:"invalidCapabilities"`
	Want                struct {
		OK       bool   `json:"ok"`
		Score    int    `json:"score"`
		Category string `json:"category"`
	} `json:"want"`
}

// TestMatchCases runs the table in testdata/match_cases.json through both
// Match and MatchPrepared.
func TestMatchCases(t *testing.T) {
	raw, err := os.ReadFile("testdata/match_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []matchCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 15 {
		t.Fatalf("only %d cases loaded", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			m, err := Compile(tc.Requirements)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			want := Result{OK: tc.Want.OK, Score: tc.Want.Score, Category: tc.Want.Category}
			if got := m.Match(tc.Capabilities); got != want {
				t.Errorf("Match = %+v, want %+v", got, want)
			}
			p, err := Prepare(tc.Capabilities)
			if tc.InvalidCapabilities {
				if err == nil {
					t.Fatal("Prepare accepted an unparsable version")
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if got := m.MatchPrepared(p); got != want {
				t.Errorf("MatchPrepared = %+v, want %+v", got, want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name      string
		req       placement.Requirements
		wantField string
		wantMsg   string
	}{
		{name: "bad constraint", req: placement.Requirements{Required: placement.Required{Runtimes: map[string]string{"python": "newest"}}},
			wantField: "placement.required.runtimes.python", wantMsg: "semver"},
		{name: "bad constraint operator", req: placement.Requirements{Required: placement.Required{Runtimes: map[string]string{"node": "!!20"}}},
			wantField: "placement.required.runtimes.node", wantMsg: "semver"},
		{name: "structural error is prefixed", req: placement.Requirements{Required: placement.Required{OS: "Linux"}},
			wantField: "placement.required.os"},
		{name: "preference error is prefixed", req: placement.Requirements{Preferred: []placement.Preference{{Label: "a", Value: "b"}}},
			wantField: "placement.preferred[0].weight", wantMsg: "1..100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.req)
			if errs.Code(err) != errs.Invalid || errs.Field(err) != tt.wantField || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Compile error = %v (field %q), want field %q mentioning %q", err, errs.Field(err), tt.wantField, tt.wantMsg)
			}
		})
	}
}

func TestCategoryNeverEchoesValues(t *testing.T) {
	secret := "zone-secret-value"
	m, err := Compile(placement.Requirements{Required: placement.Required{Labels: map[string]string{"zone": secret}}})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Match(placement.Capabilities{OS: "linux", Arch: "arm", Labels: map[string]string{"zone": "other"}})
	if r.OK || r.Category != CategoryLabel || strings.Contains(r.Category, secret) {
		t.Fatalf("Result = %+v", r)
	}
}

func TestValidateCapabilities(t *testing.T) {
	tests := []struct {
		name      string
		caps      placement.Capabilities
		wantField string
	}{
		{name: "valid", caps: placement.Capabilities{OS: "linux", Arch: "arm", Runtimes: map[string]string{"python": "3.11.4", "node": "v20"}}},
		{name: "unparsable version", caps: placement.Capabilities{OS: "linux", Arch: "arm", Runtimes: map[string]string{"python": "3.11.4", "node": "lts"}},
			wantField: "runtimes.node"},
		{name: "structural error", caps: placement.Capabilities{Arch: "arm"}, wantField: "os"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateCapabilities(tt.caps)
			if tt.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if errs.Code(err) != errs.Invalid || errs.Field(err) != tt.wantField {
				t.Fatalf("err = %v, want invalid %q", err, tt.wantField)
			}
		})
	}
}

func TestPrepareCopiesCapabilities(t *testing.T) {
	caps := placement.Capabilities{OS: "linux", Arch: "arm", Labels: map[string]string{"zone": "a"}}
	p, err := Prepare(caps)
	if err != nil {
		t.Fatal(err)
	}
	caps.Labels["zone"] = "b" // a caller reusing its map must not change the prepared worker
	m, err := Compile(placement.Requirements{Required: placement.Required{Labels: map[string]string{"zone": "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.MatchPrepared(p); !r.OK {
		t.Fatalf("MatchPrepared = %+v", r)
	}
}

func benchCapabilities() placement.Capabilities {
	c := placement.Capabilities{OS: "linux", Arch: "arm64", Executors: []string{"argv", "shell"},
		Runtimes: map[string]string{}, Labels: map[string]string{}, MemoryMiB: 2048, DiskMiB: 65536}
	// 32 entries: 8 runtimes, 16 labels, 8 features.
	for i, rt := range []string{"python", "node", "go", "java", "ruby", "php", "deno", "bun"} {
		c.Runtimes[rt] = []string{"3.11.4", "20.11.1", "1.26.0", "21.0.2", "3.3.0", "8.3.2", "1.40.0", "1.1.0"}[i]
	}
	for i := range 16 {
		c.Labels["label-"+string(rune('a'+i))] = "value-" + string(rune('a'+i))
	}
	c.Features = []string{"gpu", "armv8", "neon", "crypto", "sve", "docker", "ipv6", "usb"}
	return c
}

func benchRequirements() placement.Requirements {
	return placement.Requirements{
		Required: placement.Required{
			OS: "linux", Arch: "arm64", Executors: []string{"shell"},
			Runtimes: map[string]string{"python": ">=3.9, <4", "node": "^18 || ^20 || ^22", "go": "~1.26", "java": ">=17"},
			Labels:   map[string]string{"label-c": "value-c", "label-k": "value-k"},
			Features: []string{"gpu", "ipv6"},
		},
		Preferred: []placement.Preference{
			{Label: "label-a", Value: "value-a", Weight: 10},
			{Label: "label-p", Value: "value-p", Weight: 30},
			{Label: "label-z", Value: "value-z", Weight: 50},
		},
	}
}

func BenchmarkMatch(b *testing.B) {
	m, err := Compile(benchRequirements())
	if err != nil {
		b.Fatal(err)
	}
	caps := benchCapabilities()
	if r := m.Match(caps); !r.OK || r.Score != 40 {
		b.Fatalf("benchmark fixture does not match: %+v", r)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Match(caps)
	}
}

func BenchmarkMatchPrepared(b *testing.B) {
	m, err := Compile(benchRequirements())
	if err != nil {
		b.Fatal(err)
	}
	p, err := Prepare(benchCapabilities())
	if err != nil {
		b.Fatal(err)
	}
	if r := m.MatchPrepared(p); !r.OK || r.Score != 40 {
		b.Fatalf("benchmark fixture does not match: %+v", r)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.MatchPrepared(p)
	}
}
