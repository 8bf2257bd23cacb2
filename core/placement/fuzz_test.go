package placement

import (
	"bytes"
	"testing"
)

// FuzzDecodeCapabilities: never panics; accepted documents have a bounded
// canonical form that decodes back to the same bytes and digest.
func FuzzDecodeCapabilities(f *testing.F) {
	for _, s := range []string{
		validCaps,
		`{"os":"linux","arch":"mipsle"}`,
		`{"os":"linux","arch":"arm","labels":{"a":"1","A":"2"}}`,
		`{"os":"linux","arch":"arm","executors":["b","a","b"],"features":[]}`,
		`{"os":"linux","arch":"arm","runtimes":{"python":"3.11.4-rc.1+build.5"}}`,
		`{"os":"linux","arch":"arm","memoryMiB":-1}`,
		`{"os":"linux","arch":"arm"} trailing`,
		`{"OS":"linux"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCapabilities(data)
		if err != nil {
			return
		}
		canon, err := c.Canonical()
		if err != nil {
			t.Fatalf("accepted %q but Canonical failed: %v", data, err)
		}
		if len(canon) > MaxCapabilitiesBytes {
			t.Fatalf("canonical form is %d bytes", len(canon))
		}
		back, err := DecodeCapabilities(canon)
		if err != nil {
			t.Fatalf("canonical form %q does not decode: %v", canon, err)
		}
		again, err := back.Canonical()
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form not stable: %q → %q (%v)", canon, again, err)
		}
		d1, _ := c.Digest()
		d2, _ := back.Digest()
		if d1 != d2 {
			t.Fatalf("digest changed across a canonical round trip of %q", data)
		}
	})
}
