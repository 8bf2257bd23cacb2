package canonjson

import (
	"bytes"
	"testing"
)

var fuzzSeeds = []string{
	`{}`,
	`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`,
	`{"kind":"qinglong/command@v1","argv":{"file":"/bin/echo","args":["hi"]}}`,
	`{"a":"\u003c\u2028\ud800"}`,
	`{"a":1,"A":2}`,
	`{"a":{"b":{"c":{"d":{}}}}}`,
	`[1,2,3,4,5,6,7,8,9]`,
	`{"n":-1.5e300}`,
	"{\"bad\":\"\xff\"}",
	`{"a":1} {}`,
	`  "x"  `,
}

// FuzzValidate: Validate never panics, and an accepted document normalizes
// to a canonical form that still validates and is a fixed point.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	lim := Limits{MaxBytes: 4096, MaxDepth: 6, MaxEntries: 16, MaxString: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := Validate(data, lim); err != nil {
			return
		}
		norm, err := Normalize(data)
		if err != nil {
			t.Fatalf("Validate accepted %q but Normalize failed: %v", data, err)
		}
		relaxed := lim
		relaxed.MaxBytes = 0 // escaping (U+2028 → \u2028) may grow the document
		relaxed.MaxString = 0
		if err := Validate(norm, relaxed); err != nil {
			t.Fatalf("canonical form %q of %q does not validate: %v", norm, data, err)
		}
		again, err := Normalize(norm)
		if err != nil || !bytes.Equal(again, norm) {
			t.Fatalf("Normalize not idempotent: %q → %q (%v)", norm, again, err)
		}
	})
}

// FuzzNormalize: Normalize never panics and is idempotent.
func FuzzNormalize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		norm, err := Normalize(data)
		if err != nil {
			return
		}
		again, err := Normalize(norm)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which does not normalize: %v", data, norm, err)
		}
		if !bytes.Equal(again, norm) {
			t.Fatalf("Normalize not idempotent: %q → %q → %q", data, norm, again)
		}
	})
}
