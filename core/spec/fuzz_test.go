package spec

import (
	"bytes"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
)

// FuzzDecode: Decode never panics; an accepted spec has a canonical form
// within the limits that decodes again to the same bytes and digest.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"kind":"qinglong/command@v1","argv":{"file":"/bin/echo","args":["hi"]}}`,
		`{"kind":"qinglong/command@v1","shell":{"command":"set -e\n\techo hi","shell":"/bin/bash"},"environment":{"A":"1","_b":"<&>"},"workingDirectory":"/tmp"}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"timeoutMs":1,"retry":{"maxAttempts":16,"backoffBaseMs":1000,"backoffMaxMs":60000,"retryOnLost":true},"concurrency":"replace"}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"placement":{"required":{"os":"linux","arch":"arm","executors":["argv","argv"],"runtimes":{"python":">=3.9"},"labels":{"zone":"a"},"features":["gpu"]},"preferred":[{"label":"zone","value":"b","weight":5}]}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"placement":{}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"limits":{"maxProcesses":64,"memoryBytes":268435456}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"limits":{"memoryBytes":268435456}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"limits":{}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"environment":{"QL3_X":"1"}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"environment":{"A":"1","a":"2"}}`,
		`{"kind":"qinglong/command@v1","shell":{"command":"echo \u0000"}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"Kind":"y"}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"}} {}`,
		`{"kind":"qinglong/command@v1","script":{"file":"dir/a.js","args":["x"]},"randomDelayMs":1000}`,
		`{"kind":"qinglong/command@v1","script":{"file":"../a.js"}}`,
		`{"kind":"qinglong/command@v1","script":{"file":"a.py"},"shell":{"command":"true"}}`,
	} {
		f.Add([]byte(s))
	}
	lim := canonjson.Limits{MaxBytes: MaxCanonicalBytes, MaxDepth: MaxDepth, MaxEntries: MaxEntries, MaxString: MaxStringBytes}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			return
		}
		canon, err := c.Canonical()
		if err != nil {
			t.Fatalf("accepted %q but Canonical failed: %v", data, err)
		}
		if err := canonjson.Validate(canon, lim); err != nil {
			t.Fatalf("canonical form %q exceeds the limits: %v", canon, err)
		}
		back, err := Decode(canon)
		if err != nil {
			t.Fatalf("canonical form %q does not decode: %v", canon, err)
		}
		again, err := back.Canonical()
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form not stable: %q → %q (%v)", canon, again, err)
		}
		d1, err1 := c.Digest()
		d2, err2 := back.Digest()
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Fatalf("digest changed across a canonical round trip of %q", data)
		}
	})
}
