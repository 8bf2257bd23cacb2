package spec

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestScriptSpec(t *testing.T) {
	c, err := Decode([]byte(`{` + kind + `,"script":{"file":"dir/sign.py","args":["a","two words"]},"randomDelayMs":300000}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Script == nil || c.Script.File != "dir/sign.py" || len(c.Script.Args) != 2 || c.RandomDelayMs != 300000 {
		t.Fatalf("decoded %+v", c)
	}
	got, err := c.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"concurrency":"forbid","kind":"qinglong/command@v1","randomDelayMs":300000,` +
		`"retry":{"backoffBaseMs":0,"backoffMaxMs":0,"maxAttempts":1,"retryOnLost":false},` +
		`"script":{"args":["a","two words"],"file":"dir/sign.py"},"timeoutMs":86400000}`
	if string(got) != want {
		t.Fatalf("Canonical =\n%s\nwant\n%s", got, want)
	}
	checkCanonicalReference(t, c)

	// Empty args, a zero delay: the same digest as leaving them out.
	a, _ := Decode([]byte(`{` + kind + `,"script":{"file":"x.js","args":[]},"randomDelayMs":0}`))
	b, _ := Decode([]byte(`{` + kind + `,"script":{"file":"x.js"}}`))
	da, errA := a.Digest()
	db, errB := b.Digest()
	if errA != nil || errB != nil || da != db {
		t.Fatalf("digests %v %v (%v %v)", da, db, errA, errB)
	}
	// A different file, different args or a delay give other digests.
	for _, doc := range []string{
		`{` + kind + `,"script":{"file":"y.js"}}`,
		`{` + kind + `,"script":{"file":"x.js","args":["1"]}}`,
		`{` + kind + `,"script":{"file":"x.js"},"randomDelayMs":1}`,
		`{` + kind + `,"argv":{"file":"x.js"}}`,
	} {
		c, err := Decode([]byte(doc))
		if err != nil {
			t.Fatal(doc, err)
		}
		if d, _ := c.Digest(); d == db {
			t.Errorf("%s has the digest of x.js without args", doc)
		}
	}
}

func TestScriptSpecErrors(t *testing.T) {
	for _, tc := range []struct{ doc, field, msg string }{
		{`{` + kind + `,"script":{"file":""}}`, "script.file", "required"},
		{`{` + kind + `,"script":{"file":"../x.js"}}`, "script.file", `".."`},
		{`{` + kind + `,"script":{"file":"a/../../x.js"}}`, "script.file", `".."`},
		{`{` + kind + `,"script":{"file":"/etc/passwd"}}`, "script.file", "relative"},
		{`{` + kind + `,"script":{"file":"a\u0000.js"}}`, "script.file", "NUL"},
		{`{` + kind + `,"script":{"file":"dir/"}}`, "script.file", `must be written as "dir"`},
		{`{` + kind + `,"script":{"file":"x.js","args":["ok","a\nb"]}}`, "script.args[1]", "U+000A"},
		{`{` + kind + `,"script":{"file":"x.js","args":[` + strings.Repeat(`"a",`, MaxEntries) + `"a"]}}`, "script.args", "more than 256"},
		{`{` + kind + `,"script":{"file":"x.js","interpreter":"node"}}`, "script.interpreter", "unknown field"},
		{`{` + kind + `,"script":{"file":"x.js"},"shell":{"command":"true"}}`, "script", "got both shell and script"},
		{`{` + kind + `,"script":{"file":"x.js"},"argv":{"file":"x"}}`, "script", "got both argv and script"},
		{`{` + kind + `,"script":{"file":"x.js"},"argv":{"file":"x"},"shell":{"command":"true"}}`, "script", "all three"},
		{`{` + kind + `,"script":{"file":"x.js"},"randomDelayMs":-1}`, "randomDelayMs", "0..3600000"},
		{`{` + kind + `,"script":{"file":"x.js"},"randomDelayMs":3600001}`, "randomDelayMs", "1 h"},
	} {
		_, err := Decode([]byte(tc.doc))
		if errs.Field(err) != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Decode(%.90s) = %v (field %q); want field %q mentioning %q", tc.doc, err, errs.Field(err), tc.field, tc.msg)
		}
		checkFastPath(t, []byte(tc.doc))
	}
}

func TestScriptOnTheFastPath(t *testing.T) {
	for _, d := range []string{
		`{` + kind + `,"script":{"file":"京东/签到.js","args":["a"]},"randomDelayMs":5}`,
		`{` + kind + `,"script":{"args":[],"file":"x.py"}}`,
		`{` + kind + `,"shell":{"command":"task x.js a b"},"randomDelayMs":60000}`,
	} {
		if !checkFastPath(t, []byte(d)) {
			t.Errorf("not on the fast path: %s", d)
		}
	}
}

// A Go-built script spec gets the same defaults and canonical form.
func TestGoBuiltScript(t *testing.T) {
	c := Command{Kind: KindCommandV1, Script: &Script{File: "a.js", Args: []string{}}}.WithDefaults()
	d1, err := c.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode([]byte(`{` + kind + `,"script":{"file":"a.js"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d2, _ := dec.Digest(); d1 != d2 {
		t.Fatalf("Go-built %s ≠ decoded %s", d1, d2)
	}
}
