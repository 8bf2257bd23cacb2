package matcher

import (
	"slices"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/placement"
)

var categories = []string{
	CategoryOS, CategoryArch, CategoryExecutor, CategoryRuntimeMissing,
	CategoryRuntimeVersion, CategoryLabel, CategoryFeature, CategoryCapabilityInvalid,
}

// FuzzCompileMatch: Compile and Match never panic; results are
// well-formed, deterministic, and Match agrees with MatchPrepared.
func FuzzCompileMatch(f *testing.F) {
	f.Add([]byte(`{"required":{"os":"linux","runtimes":{"python":">=3.9, <4"},"labels":{"zone":"a"}},"preferred":[{"label":"zone","value":"a","weight":7}]}`),
		[]byte(`{"os":"linux","arch":"arm","runtimes":{"python":"3.11.4"},"labels":{"zone":"a"}}`))
	f.Add([]byte(`{"required":{"runtimes":{"node":"^18 || ^20 || ~22.1"}}}`),
		[]byte(`{"os":"linux","arch":"arm","runtimes":{"node":"v22.1.9"}}`))
	f.Add([]byte(`{"required":{"runtimes":{"node":"1.2 - 3.4"},"executors":["shell"],"features":["gpu"]}}`),
		[]byte(`{"os":"linux","arch":"arm","runtimes":{"node":"2.0.0-beta"},"executors":["shell"]}`))
	f.Add([]byte(`{"required":{"runtimes":{"x":"*"}}}`), []byte(`{"os":"linux","arch":"arm","runtimes":{"x":"not"}}`))
	f.Add([]byte(`{"required":{"runtimes":{"x":">=99999999999999999999"}}}`), []byte(`{"os":"a","arch":"b"}`))
	lim := canonjson.Limits{MaxBytes: 16 << 10, MaxDepth: 4, MaxEntries: 64, MaxString: 256}
	f.Fuzz(func(t *testing.T, reqJSON, capsJSON []byte) {
		var req placement.Requirements
		if err := canonjson.DecodeStrict(reqJSON, lim, &req); err != nil {
			return
		}
		m, err := Compile(req)
		if err != nil {
			return
		}
		caps, err := placement.DecodeCapabilities(capsJSON)
		if err != nil {
			return
		}
		r := m.Match(caps)
		if r != m.Match(caps) {
			t.Fatal("Match is not deterministic")
		}
		if r.OK {
			if r.Category != "" || r.Score < 0 || r.Score > placement.MaxPreferred*placement.MaxWeight {
				t.Fatalf("bad OK result %+v", r)
			}
		} else if r.Score != 0 || !slices.Contains(categories, r.Category) {
			t.Fatalf("bad mismatch result %+v", r)
		}
		p, err := Prepare(caps)
		if err != nil {
			return
		}
		if rp := m.MatchPrepared(p); rp != r {
			t.Fatalf("MatchPrepared = %+v, Match = %+v", rp, r)
		}
	})
}
