package spec

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestEnvScope(t *testing.T) {
	base := `{` + kind + `,"argv":{"file":"x"}`
	cases := []struct {
		name       string
		doc        string
		all, wins  bool
		use        []string
		field      string // non-empty: refused naming this field
		sameAsBase bool   // same digest as the spec without env
	}{
		{name: "absent", doc: base + `}`, all: true, sameAsBase: true},
		{name: "empty object", doc: base + `,"env":{}}`, all: true, sameAsBase: true},
		{name: "allowlist sorted", doc: base + `,"env":{"use":["B","A"]}}`, use: []string{"A", "B"}},
		{name: "inline wins", doc: base + `,"env":{"inlineWins":true}}`, all: true, wins: true},
		{name: "both", doc: base + `,"env":{"use":["A"],"inlineWins":true}}`, use: []string{"A"}, wins: true},
		{name: "empty allowlist", doc: base + `,"env":{"use":[]}}`, field: "env.use"},
		{name: "reserved", doc: base + `,"env":{"use":["ql3_x"]}}`, field: "env.use[0]"},
		{name: "bad name", doc: base + `,"env":{"use":["A=B"]}}`, field: "env.use[0]"},
		{name: "duplicate", doc: base + `,"env":{"use":["A","A"]}}`, field: "env.use[1]"},
		{name: "unknown field", doc: base + `,"env":{"uses":["A"]}}`, field: "env.uses"},
	}
	baseDigest := mustDigest(t, base+`}`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFastPath(t, []byte(tc.doc))
			c, err := Decode([]byte(tc.doc))
			if tc.field != "" {
				if err == nil || errs.Field(err) != tc.field {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkCanonicalReference(t, c)
			if c.Env.All() != tc.all || c.Env.Wins() != tc.wins {
				t.Fatalf("all %v wins %v, want %v %v", c.Env.All(), c.Env.Wins(), tc.all, tc.wins)
			}
			if !tc.all && (c.Env == nil || len(c.Env.Use) != len(tc.use) || c.Env.Use[0] != tc.use[0]) {
				t.Fatalf("use = %+v, want %v", c.Env, tc.use)
			}
			if d := mustDigest(t, tc.doc); (d == baseDigest) != tc.sameAsBase {
				t.Fatalf("digest equal to the base: %v, want %v", d == baseDigest, tc.sameAsBase)
			}
		})
	}
}
