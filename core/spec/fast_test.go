package spec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/internal/fastcheck"
)

// checkFastPath holds the fast path to the reference decoder for one
// document (fastcheck.Check; the encoding is the canonical form) and
// reports whether the fast path accepted data.
func checkFastPath(t *testing.T, data []byte) bool {
	t.Helper()
	return fastcheck.Check(t, data, decodeFast, decodeReference, Command.Canonical)
}

// checkCanonicalReference: the hand-written encoder writes what
// canonjson.Canonical writes for the normalized value.
func checkCanonicalReference(t *testing.T, c Command) {
	t.Helper()
	got, err := c.Canonical()
	if err != nil {
		return
	}
	want, err := canonjson.Canonical(c.normalize())
	if err != nil {
		t.Fatalf("canonjson.Canonical: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical form differs from the reference:\n got  %s\n want %s", got, want)
	}
}

func TestFastPathMatchesReference(t *testing.T) {
	fastDocs := []string{
		`{` + kind + `,"argv":{"file":"/bin/echo","args":["hi","<&>","\u2028","\"q\"\\"]}}`,
		`{` + kind + `,"shell":{"command":"echo 你好\n","shell":"/bin/bash"},"environment":{"A":"1","_b":"x","Z9":""},"workingDirectory":"/tmp"}`,
		`{` + kind + `,"argv":{"file":"x"},"timeoutMs":1,"retry":{"maxAttempts":16,"backoffBaseMs":1000,"backoffMaxMs":60000,"retryOnLost":true},"concurrency":"replace"}`,
		`{` + kind + `,"argv":{"file":"x"},"placement":{"required":{"os":"linux","arch":"arm","executors":["shell","argv","argv"],"runtimes":{"python":">=3.9"},"labels":{"zone":"a"},"features":["gpu"]},"preferred":[{"label":"zone","value":"b","weight":5},{"label":"a","value":"b","weight":1}]}}`,
		`{` + kind + `,"argv":{"file":"x","args":[]},"environment":{},"placement":{"required":{},"preferred":[]}}`,
		" {\n \"argv\" : {\"file\" : \"x\"} , " + kind + " }\n",
	}
	for _, d := range fastDocs {
		if !checkFastPath(t, []byte(d)) {
			t.Errorf("not on the fast path: %s", d)
		}
		c, err := Decode([]byte(d))
		if err != nil {
			t.Fatalf("Decode(%s): %v", d, err)
		}
		checkCanonicalReference(t, c)
	}
	slowDocs := []string{
		`{` + kind + `,"argv":null}`,
		`{` + kind + `,"argv":{"file":"x"},"timeoutMs":null}`,
		`{` + kind + `,"argv":{"file":"x"},"Kind":"y"}`,
		`{` + kind + `,"argv":{"file":"x"},"image":"y"}`,
		`{` + kind + `,"argv":{"file":"x"},"timeoutMs":1.0}`,
		`{` + kind + `,"argv":{"file":"\ud800"}}`,
		`{` + kind + `,"argv":{"file":"x"},"environment":{"A":"1","a":"2"}}`,
		`{` + kind + `,"argv":{"file":"x"}} {}`,
		`{` + kind + `,"argv":{"file":"x"},"placement":{"required":{"runtimes":{"é":"1"}}}}`,
	}
	for _, d := range slowDocs {
		if checkFastPath(t, []byte(d)) {
			t.Errorf("on the fast path: %s", d)
		}
	}
}

// Validation faults found after a successful scan are the reference's
// faults: same code, same field.
func TestFastPathRefusalsMatchReference(t *testing.T) {
	for _, d := range []string{
		`{"kind":"x","argv":{"file":"x"}}`,
		`{` + kind + `,"argv":{"file":"x"},"retry":{"maxAttempts":17}}`,
		`{` + kind + `,"argv":{"file":"x"},"environment":{"QL3_X":"1"}}`,
		`{` + kind + `,"argv":{"file":"x","args":["a\u0000"]}}`,
		`{` + kind + `,"shell":{"command":"echo","shell":"/bin/zsh"}}`,
		`{` + kind + `,"argv":{"file":"x"},"placement":{"required":{"os":"LINUX!"}}}`,
		`{` + kind + `,"argv":{"file":"x"},"environment":{"A":"` + strings.Repeat("v", MaxStringBytes) + `","B":"` + strings.Repeat("v", MaxStringBytes) + `","C":"` + strings.Repeat("v", MaxStringBytes) + `","D":"` + strings.Repeat("v", MaxStringBytes) + `","E":"x"}}`,
	} {
		_, fastErr := decodeFast([]byte(d))
		if fastErr == nil || errors.Is(fastErr, canonjson.ErrNotFast) {
			t.Errorf("%.80s: fast path %v, want a validation refusal", d, fastErr)
			continue
		}
		checkFastPath(t, []byte(d))
	}
}

// FuzzDecodeFastPath: the fast path and the reference decoder agree on
// every input (see checkFastPath), and the canonical encoder agrees with
// canonjson.Canonical on everything accepted.
func FuzzDecodeFastPath(f *testing.F) {
	for _, s := range []string{
		`{"kind":"qinglong/command@v1","argv":{"file":"/bin/echo","args":["hi"]}}`,
		`{"kind":"qinglong/command@v1","shell":{"command":"set -e\n\techo hi","shell":"/bin/bash"},"environment":{"A":"1","_b":"<&>"},"workingDirectory":"/tmp"}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"timeoutMs":1,"retry":{"maxAttempts":16,"backoffBaseMs":1000,"backoffMaxMs":60000,"retryOnLost":true},"concurrency":"replace"}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"placement":{"required":{"os":"linux","arch":"arm","executors":["argv","argv"],"runtimes":{"python":">=3.9"},"labels":{"zone":"a"},"features":["gpu"]},"preferred":[{"label":"zone","value":"b","weight":5}]}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"placement":{}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"environment":{"A":"1","a":"2"}}`,
		`{"kind":"qinglong/command@v1","shell":{"command":"echo \u0000 \ud83d\ude00 \ud800"}}`,
		`{"kind":"qinglong/command@v1","argv":{"file":"x"},"retry":{"maxAttempts":null}}`,
		`{"kind":"qinglong/command@v1","script":{"file":"a/b.py","args":["1"]},"randomDelayMs":7}`,
		`{"kind":"qinglong/command@v1","script":{"file":"a/./b.py"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPath(t, data)
		if c, err := decodeReference(data); err == nil {
			checkCanonicalReference(t, c)
		}
	})
}

// Issue #13 item 5: "\ud800", "\udfff" and "\ufffd" were one argument (and
// one digest) because encoding/json decodes unpaired surrogate escapes to
// U+FFFD. The first two are refused now, naming the field.
func TestDecodeRefusesUnpairedSurrogates(t *testing.T) {
	for _, arg := range []string{`\ud800`, `\udfff`, `a\ud83d`} {
		doc := `{` + kind + `,"argv":{"file":"/bin/echo","args":["ok","` + arg + `"]}}`
		_, err := Decode([]byte(doc))
		if errs.Code(err) != errs.Invalid || errs.Field(err) != "argv.args[1]" || !strings.Contains(err.Error(), "surrogate") {
			t.Errorf("Decode(%s) = %v, want invalid argv.args[1] naming the surrogate", doc, err)
		}
	}
	if _, err := Decode([]byte(`{` + kind + `,"argv":{"file":"/bin/echo","args":["\ufffd","\ud83d\ude00"]}}`)); err != nil {
		t.Errorf("U+FFFD and a surrogate pair: %v", err)
	}
}
