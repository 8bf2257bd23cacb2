package spec

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

const kind = `"kind":"qinglong/command@v1"`

func TestDecodeDefaults(t *testing.T) {
	c, err := Decode([]byte(`{` + kind + `,"argv":{"file":"/bin/echo","args":["hi"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.TimeoutMs != DefaultTimeoutMs || c.Retry.MaxAttempts != 1 || c.Concurrency != ConcurrencyForbid {
		t.Fatalf("defaults not applied: %+v", c)
	}
	got, err := c.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"argv":{"args":["hi"],"file":"/bin/echo"},"concurrency":"forbid","kind":"qinglong/command@v1",` +
		`"retry":{"backoffBaseMs":0,"backoffMaxMs":0,"maxAttempts":1,"retryOnLost":false},"timeoutMs":86400000}`
	if string(got) != want {
		t.Fatalf("Canonical =\n%s\nwant\n%s", got, want)
	}

	sh, err := Decode([]byte(`{` + kind + `,"shell":{"command":"echo hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sh.Shell.Shell != ShellSh {
		t.Fatalf("shell default = %q", sh.Shell.Shell)
	}
}

// Writing a default out and omitting it, or writing empty collections and
// omitting them, yields one canonical form and one digest.
func TestDigestIgnoresSpelledOutDefaults(t *testing.T) {
	variants := []string{
		`{` + kind + `,"shell":{"command":"echo hi"}}`,
		`{` + kind + `,"shell":{"command":"echo hi","shell":"/bin/sh"},"timeoutMs":86400000,` +
			`"retry":{"maxAttempts":1,"backoffBaseMs":0,"backoffMaxMs":0,"retryOnLost":false},"concurrency":"forbid",` +
			`"environment":{},"workingDirectory":"","placement":{"required":{"executors":[]},"preferred":[]}}`,
		"{\n  " + kind + ",\n  \"retry\": {},\n  \"shell\": {\"command\": \"echo hi\"}\n}\n",
	}
	var first string
	for i, v := range variants {
		c, err := Decode([]byte(v))
		if err != nil {
			t.Fatalf("variant %d: %v", i, err)
		}
		d, err := c.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = d.String()
		} else if d.String() != first {
			canon, _ := c.Canonical()
			t.Errorf("variant %d digest %s ≠ %s; canonical %s", i, d, first, canon)
		}
	}
}

func TestDigestDistinguishesSpecs(t *testing.T) {
	base := `{` + kind + `,"argv":{"file":"/bin/echo","args":["a","b"]}}`
	others := []string{
		`{` + kind + `,"argv":{"file":"/bin/echo","args":["b","a"]}}`, // argument order matters
		`{` + kind + `,"argv":{"file":"/bin/echo","args":["a","b"]},"timeoutMs":1000}`,
		`{` + kind + `,"argv":{"file":"/bin/echo","args":["a","b"]},"retry":{"retryOnLost":true}}`,
		`{` + kind + `,"argv":{"file":"/bin/echo","args":["a","b"]},"environment":{"A":""}}`,
		`{` + kind + `,"shell":{"command":"/bin/echo a b"}}`,
	}
	d0 := mustDigest(t, base)
	for _, o := range others {
		if mustDigest(t, o) == d0 {
			t.Errorf("%s shares a digest with %s", o, base)
		}
	}
}

func mustDigest(t *testing.T, doc string) string {
	t.Helper()
	c, err := Decode([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	d, err := c.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestCanonicalRoundTrip(t *testing.T) {
	doc := `{` + kind + `,"argv":{"file":"python3","args":["-c","print('<&>')","é"]},
		"environment":{"PYTHONUNBUFFERED":"1","LANG":"C.UTF-8","path_extra":"/opt/bin"},
		"workingDirectory":"/srv/jobs","timeoutMs":600000,
		"retry":{"maxAttempts":3,"backoffBaseMs":1000,"backoffMaxMs":60000,"retryOnLost":true},
		"concurrency":"replace","limits":{"memoryBytes":268435456,"maxProcesses":64},
		"placement":{"required":{"os":"linux","executors":["argv"],"runtimes":{"python":">=3.9"},"labels":{"zone":"a"}},
		             "preferred":[{"label":"zone","value":"b","weight":5},{"label":"disk","value":"ssd","weight":50}]}}`
	c, err := Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	canon, err := c.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(canon, []byte(`print('<&>')`)) {
		t.Errorf("canonical form escapes HTML: %s", canon)
	}
	if !bytes.Contains(canon, []byte(`"preferred":[{"label":"disk"`)) {
		t.Errorf("preferences not in canonical order: %s", canon)
	}
	back, err := Decode(canon)
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.Canonical()
	if err != nil || !bytes.Equal(again, canon) {
		t.Fatalf("canonical form not a fixed point:\n%s\n%s (%v)", canon, again, err)
	}
	d1, _ := c.Digest()
	d2, _ := back.Digest()
	if d1 != d2 {
		t.Fatal("digest changed across the round trip")
	}
}

func TestGoBuiltCommand(t *testing.T) {
	c := Command{Kind: KindCommandV1, Shell: &Shell{Command: "echo hi"},
		Placement: &placement.Requirements{}}
	if _, err := c.Canonical(); errs.Field(err) != "shell.shell" {
		t.Fatalf("zero-valued optional field accepted: %v", err)
	}
	full := c.WithDefaults()
	if c.Shell.Shell != "" {
		t.Fatal("WithDefaults mutated its receiver")
	}
	d, err := full.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != mustDigest(t, `{`+kind+`,"shell":{"command":"echo hi"}}`) {
		t.Fatal("Go-built command with defaults differs from the decoded one")
	}

	// encoding/json would silently turn invalid UTF-8 into U+FFFD, giving a
	// canonical form that does not describe the value: rejected instead.
	bad := full
	bad.Environment = map[string]string{"A": "\xff"}
	if _, err := bad.Canonical(); errs.Field(err) != "environment.A" || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8 in a Go-built command: %v", err)
	}
	bad = full
	bad.Shell = &Shell{Command: "echo", Shell: ShellBash}
	bad.Argv = &Argv{File: "/bin/echo"}
	if _, err := bad.Digest(); errs.Field(err) != "shell" {
		t.Fatalf("argv and shell both set: %v", err)
	}
}

func TestBackoffMs(t *testing.T) {
	tests := []struct {
		policy RetryPolicy
		failed int
		want   int64
	}{
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 0, 0},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, -3, 0},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 1, 1000},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 2, 2000},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 6, 32000},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 7, 60000},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 64000}, 7, 64000}, // exactly at the cap
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 16, 60000},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, 64, 60000},
		{RetryPolicy{BackoffBaseMs: 1000, BackoffMaxMs: 60000}, math.MaxInt, 60000},
		{RetryPolicy{BackoffBaseMs: MaxBackoffMs, BackoffMaxMs: MaxBackoffMs}, 1, MaxBackoffMs},
		{RetryPolicy{BackoffBaseMs: MaxBackoffMs, BackoffMaxMs: MaxBackoffMs}, 40, MaxBackoffMs},
		{RetryPolicy{BackoffBaseMs: 1, BackoffMaxMs: math.MaxInt64}, 63, 1 << 62},
		{RetryPolicy{BackoffBaseMs: 3, BackoffMaxMs: math.MaxInt64}, 62, 3 << 61},
		{RetryPolicy{BackoffBaseMs: 3, BackoffMaxMs: math.MaxInt64}, 63, math.MaxInt64},
		{RetryPolicy{BackoffBaseMs: 0, BackoffMaxMs: 60000}, 5, 0},
		{RetryPolicy{BackoffBaseMs: 500, BackoffMaxMs: 500}, 3, 500}, // constant backoff
		{RetryPolicy{BackoffBaseMs: -5, BackoffMaxMs: 100}, 2, 0},
		{RetryPolicy{BackoffBaseMs: 100, BackoffMaxMs: -1}, 2, 0},
	}
	for _, tt := range tests {
		if got := tt.policy.BackoffMs(tt.failed); got != tt.want {
			t.Errorf("%+v.BackoffMs(%d) = %d, want %d", tt.policy, tt.failed, got, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	argv := `"argv":{"file":"/bin/true"}`
	big := strings.Repeat("x", MaxStringBytes)
	tests := []struct {
		name      string
		doc       string
		wantCode  string
		wantField string
		wantMsg   string
	}{
		{"missing kind", `{` + argv + `}`, errs.Invalid, "kind", "qinglong/command@v1"},
		{"wrong kind", `{"kind":"qinglong/command@v2",` + argv + `}`, errs.Invalid, "kind", "must be"},
		{"neither argv nor shell", `{` + kind + `}`, errs.Invalid, "argv", "got neither"},
		{"both argv and shell", `{` + kind + `,` + argv + `,"shell":{"command":"true"}}`, errs.Invalid, "shell", "got both"},
		{"argv null", `{` + kind + `,"argv":null}`, errs.Invalid, "argv", "got neither"},
		{"empty file", `{` + kind + `,"argv":{"file":""}}`, errs.Invalid, "argv.file", "required"},
		{"file too long", `{` + kind + `,"argv":{"file":"/` + strings.Repeat("a", MaxPathBytes) + `"}}`, errs.TooLarge, "argv.file", "limit is 4096"},
		{"arg with newline", `{` + kind + `,"argv":{"file":"x","args":["a","b","c","d\ne"]}}`, errs.Invalid, "argv.args[3]", "U+000A"},
		{"arg with tab", `{` + kind + `,"argv":{"file":"x","args":["\t"]}}`, errs.Invalid, "argv.args[0]", "U+0009"},
		{"arg with DEL", `{` + kind + `,"argv":{"file":"x","args":["\u007f"]}}`, errs.Invalid, "argv.args[0]", "U+007F"},
		{"arg with C1 control", `{` + kind + `,"argv":{"file":"x","args":["\u0085"]}}`, errs.Invalid, "argv.args[0]", "U+0085"},
		{"too many args", `{` + kind + `,"argv":{"file":"x","args":[` + strings.Repeat(`"a",`, MaxEntries) + `"a"]}}`, errs.TooLarge, "argv.args", "more than 256"},
		{"arg too long", `{` + kind + `,"argv":{"file":"x","args":["` + big + `x"]}}`, errs.TooLarge, "argv.args[0]", "limit is 16384"},
		{"args wrong type", `{` + kind + `,"argv":{"file":"x","args":"a b"}}`, errs.Invalid, "argv.args", "expected []string"},
		{"empty shell command", `{` + kind + `,"shell":{"command":"  \n"}}`, errs.Invalid, "shell.command", "required"},
		{"shell command with CR", `{` + kind + `,"shell":{"command":"echo a\r\n"}}`, errs.Invalid, "shell.command", "U+000D"},
		{"shell command with NUL", `{` + kind + `,"shell":{"command":"echo \u0000"}}`, errs.Invalid, "shell.command", "U+0000"},
		{"shell command too long", `{` + kind + `,"shell":{"command":"` + big + `x"}}`, errs.TooLarge, "shell.command", "limit is 16384"},
		{"unsupported shell", `{` + kind + `,"shell":{"command":"true","shell":"/bin/zsh"}}`, errs.Invalid, "shell.shell", "/bin/sh or /bin/bash"},
		{"explicit empty shell", `{` + kind + `,"shell":{"command":"true","shell":""}}`, errs.Invalid, "shell.shell", "/bin/sh or /bin/bash"},
		{"env reserved prefix", `{` + kind + `,` + argv + `,"environment":{"QL3_RUN_ID":"x"}}`, errs.Invalid, "environment.QL3_RUN_ID", "reserved"},
		{"env reserved prefix lower case", `{` + kind + `,` + argv + `,"environment":{"ql3_x":"x"}}`, errs.Invalid, "environment.ql3_x", "reserved"},
		{"env name starts with digit", `{` + kind + `,` + argv + `,"environment":{"1A":"x"}}`, errs.Invalid, "environment", "[A-Za-z_]"},
		{"env name with dash", `{` + kind + `,` + argv + `,"environment":{"A-B":"x"}}`, errs.Invalid, "environment", "[A-Za-z_]"},
		{"env name empty", `{` + kind + `,` + argv + `,"environment":{"":"x"}}`, errs.Invalid, "environment", "[A-Za-z_]"},
		{"env NUL value", `{` + kind + `,` + argv + `,"environment":{"A":"x\u0000y"}}`, errs.Invalid, "environment.A", "NUL"},
		{"env newline value", `{` + kind + `,` + argv + `,"environment":{"A":"x\ny"}}`, errs.Invalid, "environment.A", "U+000A"},
		{"env value too long", `{` + kind + `,` + argv + `,"environment":{"A":"` + big + `x"}}`, errs.TooLarge, "environment.A", "limit is 16384"},
		{"env case-folded duplicate", `{` + kind + `,` + argv + `,"environment":{"PATH":"a","Path":"b"}}`, errs.Invalid, "environment.Path", "duplicate"},
		{"env too many", `{` + kind + `,` + argv + `,"environment":{` + envEntries(MaxEnvEntries+1, 1) + `}}`, errs.TooLarge, "environment", "more than 256"},
		{"env total too large", `{` + kind + `,` + argv + `,"environment":{` + envEntries(5, MaxStringBytes-8) + `}}`, errs.TooLarge, "environment", "65536 bytes"},
		{"relative working directory", `{` + kind + `,` + argv + `,"workingDirectory":"srv/jobs"}`, errs.Invalid, "workingDirectory", "absolute"},
		{"working directory control char", `{` + kind + `,` + argv + `,"workingDirectory":"/srv\u001b"}`, errs.Invalid, "workingDirectory", "U+001B"},
		{"timeout zero", `{` + kind + `,` + argv + `,"timeoutMs":0}`, errs.Invalid, "timeoutMs", "1..31536000000"},
		{"timeout too long", `{` + kind + `,` + argv + `,"timeoutMs":31536000001}`, errs.Invalid, "timeoutMs", "365 days"},
		{"timeout fraction", `{` + kind + `,` + argv + `,"timeoutMs":1.5}`, errs.Invalid, "timeoutMs", "expected int64"},
		{"timeout string", `{` + kind + `,` + argv + `,"timeoutMs":"1s"}`, errs.Invalid, "timeoutMs", "expected int64"},
		{"max attempts zero", `{` + kind + `,` + argv + `,"retry":{"maxAttempts":0}}`, errs.Invalid, "retry.maxAttempts", "1..16"},
		{"max attempts 17", `{` + kind + `,` + argv + `,"retry":{"maxAttempts":17}}`, errs.Invalid, "retry.maxAttempts", "1..16"},
		{"max attempts wrong type", `{` + kind + `,` + argv + `,"retry":{"maxAttempts":"3"}}`, errs.Invalid, "retry.maxAttempts", "expected int"},
		{"backoff base negative", `{` + kind + `,` + argv + `,"retry":{"backoffBaseMs":-1}}`, errs.Invalid, "retry.backoffBaseMs", "0..86400000"},
		{"backoff base over 24h", `{` + kind + `,` + argv + `,"retry":{"backoffBaseMs":86400001,"backoffMaxMs":86400001}}`, errs.Invalid, "retry.backoffBaseMs", "24 h"},
		{"backoff max below base", `{` + kind + `,` + argv + `,"retry":{"backoffBaseMs":1000,"backoffMaxMs":999}}`, errs.Invalid, "retry.backoffMaxMs", "backoffBaseMs (1000)"},
		{"backoff max over 24h", `{` + kind + `,` + argv + `,"retry":{"backoffMaxMs":86400001}}`, errs.Invalid, "retry.backoffMaxMs", "86400000"},
		{"unknown concurrency", `{` + kind + `,` + argv + `,"concurrency":"queue"}`, errs.Invalid, "concurrency", "allow, forbid or replace"},
		{"placement structural", `{` + kind + `,` + argv + `,"placement":{"required":{"os":"Linux"}}}`, errs.Invalid, "placement.required.os", "[a-z0-9]+"},
		{"placement weight", `{` + kind + `,` + argv + `,"placement":{"preferred":[{"label":"a","value":"b","weight":0}]}}`, errs.Invalid, "placement.preferred[0].weight", "1..100"},
		{"placement unknown field", `{` + kind + `,` + argv + `,"placement":{"required":{"gpu":true}}}`, errs.Invalid, "placement.required.gpu", "unknown field"},
		{"limits processes too few", `{` + kind + `,` + argv + `,"limits":{"maxProcesses":7}}`, errs.Invalid, "limits.maxProcesses", "8..1048576"},
		{"limits processes too many", `{` + kind + `,` + argv + `,"limits":{"maxProcesses":1048577}}`, errs.Invalid, "limits.maxProcesses", "8..1048576"},
		{"limits memory too small", `{` + kind + `,` + argv + `,"limits":{"memoryBytes":4194303}}`, errs.Invalid, "limits.memoryBytes", "4 MiB..1 TiB"},
		{"limits memory negative", `{` + kind + `,` + argv + `,"limits":{"memoryBytes":-1}}`, errs.Invalid, "limits.memoryBytes", "4 MiB..1 TiB"},
		{"limits unknown field", `{` + kind + `,` + argv + `,"limits":{"cpu":1}}`, errs.Invalid, "limits.cpu", "unknown field"},
		{"unknown field", `{` + kind + `,` + argv + `,"image":"alpine"}`, errs.Invalid, "image", "unknown field"},
		{"unknown nested field", `{` + kind + `,"argv":{"file":"x","env":{}}}`, errs.Invalid, "argv.env", "unknown field"},
		{"wrong-case field", `{` + kind + `,` + argv + `,"TimeoutMs":5}`, errs.Invalid, "TimeoutMs", "unknown field"},
		{"duplicate key", `{` + kind + `,` + argv + `,"timeoutMs":5,"timeoutMs":6}`, errs.Invalid, "timeoutMs", "duplicate"},
		{"trailing data", `{` + kind + `,` + argv + `} {}`, errs.Invalid, "", "after the JSON value"},
		{"bad UTF-8", "{" + kind + ",\"argv\":{\"file\":\"\xff\"}}", errs.Invalid, "", "UTF-8"},
		{"not an object", `[` + kind + `]`, errs.Invalid, "", "expected a JSON object"},
		{"too deep", `{` + kind + `,` + argv + `,"placement":{"required":{"labels":{"a":` + strings.Repeat("[", 10) + strings.Repeat("]", 10) + `}}}}`,
			errs.Invalid, "placement.required.labels.a" + strings.Repeat("[0]", 8), "limit of 12"},
		{"input too large", `{` + kind + `,` + argv + strings.Repeat(" ", MaxInputBytes) + `}`, errs.TooLarge, "", "limit is 131072"},
		{"canonical too large", `{` + kind + `,"shell":{"command":"` + big + `"},"environment":{` + envEntries(4, MaxStringBytes-8) + `}}`,
			errs.TooLarge, "", "canonical spec is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if err == nil {
				t.Fatalf("accepted; want %s error on %q", tt.wantCode, tt.wantField)
			}
			if errs.Code(err) != tt.wantCode || errs.Field(err) != tt.wantField || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("got %s %q %v; want %s %q mentioning %q", errs.Code(err), errs.Field(err), err, tt.wantCode, tt.wantField, tt.wantMsg)
			}
		})
	}
}

// envEntries renders n environment entries whose values are size bytes.
func envEntries(n, size int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"V` + strconv.Itoa(i) + `":"` + strings.Repeat("v", size) + `"`
	}
	return strings.Join(parts, ",")
}

func TestDecodeAcceptsLimits(t *testing.T) {
	big := strings.Repeat("x", MaxStringBytes)
	docs := []string{
		`{` + kind + `,"argv":{"file":"x","args":[` + strings.Repeat(`"a",`, MaxEntries-1) + `"a"]}}`,
		`{` + kind + `,"shell":{"command":"` + big[:MaxStringBytes-4] + `\n\tx"}}`,
		`{` + kind + `,"shell":{"command":"set -e\n\techo \"$HOME\" | tr a b"},"environment":{"_X":"é 中文 <>&"}}`,
		`{` + kind + `,"argv":{"file":"x"},"environment":{` + envEntries(MaxEnvEntries, 1) + `}}`,
		`{` + kind + `,"argv":{"file":"x"},"timeoutMs":1}`,
		`{` + kind + `,"argv":{"file":"x"},"timeoutMs":31536000000}`,
		`{` + kind + `,"argv":{"file":"x"},"retry":{"maxAttempts":16,"backoffBaseMs":86400000,"backoffMaxMs":86400000}}`,
		`{` + kind + `,"argv":{"file":"x"},"concurrency":"allow"}`,
		`{` + kind + `,"shell":{"command":"x","shell":"/bin/bash"},"workingDirectory":"/"}`,
	}
	for i, doc := range docs {
		c, err := Decode([]byte(doc))
		if err != nil {
			t.Errorf("doc %d rejected: %v", i, err)
			continue
		}
		canon, err := c.Canonical()
		if err != nil || len(canon) > MaxCanonicalBytes {
			t.Errorf("doc %d: canonical %d bytes, %v", i, len(canon), err)
		}
	}
}

// TestLimitsCanonical: limits are optional; an empty object is the same
// spec as none, and each field appears only when set.
func TestLimitsCanonical(t *testing.T) {
	argv := `"argv":{"file":"/bin/true"}`
	for _, tc := range []struct{ in, want string }{
		{`{` + kind + `,` + argv + `,"limits":{}}`, ``},
		{`{` + kind + `,` + argv + `,"limits":{"maxProcesses":64}}`, `"limits":{"maxProcesses":64}`},
		{`{` + kind + `,` + argv + `,"limits":{"memoryBytes":4194304}}`, `"limits":{"memoryBytes":4194304}`},
		{`{` + kind + `,` + argv + `,"limits":{"memoryBytes":4194304,"maxProcesses":8}}`, `"limits":{"maxProcesses":8,"memoryBytes":4194304}`},
	} {
		c, err := Decode([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		canon, err := c.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" && bytes.Contains(canon, []byte(`"limits"`)) || !bytes.Contains(canon, []byte(tc.want)) {
			t.Errorf("%s: canonical %s, want it to hold %q", tc.in, canon, tc.want)
		}
		if ref, err := canonjson.Canonical(c); err != nil || !bytes.Equal(ref, canon) {
			t.Errorf("canonical %s differs from the reference %s (%v)", canon, ref, err)
		}
	}
}
