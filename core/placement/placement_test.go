package placement

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

const validCaps = `{"os":"linux","arch":"arm64","executors":["shell","argv","shell"],
	"runtimes":{"python":"3.11.4","node":"20.11.0"},"labels":{"zone":"cn-east-1","tier":""},
	"features":["gpu","armv8"],"memoryMiB":1024,"diskMiB":4096}`

func TestDecodeCapabilities(t *testing.T) {
	long := strings.Repeat("a", MaxNameLen+1)
	tests := []struct {
		name      string
		doc       string
		wantCode  string
		wantField string
		wantMsg   string
	}{
		{name: "valid", doc: validCaps},
		{name: "minimal", doc: `{"os":"linux","arch":"mipsle"}`},
		{name: "missing os", doc: `{"arch":"amd64"}`, wantCode: errs.Invalid, wantField: "os", wantMsg: "required"},
		{name: "upper-case arch", doc: `{"os":"linux","arch":"AMD64"}`, wantCode: errs.Invalid, wantField: "arch"},
		{name: "os too long", doc: `{"os":"` + strings.Repeat("l", 33) + `","arch":"arm"}`,
			wantCode: errs.Invalid, wantField: "os", wantMsg: "limit is 32"},
		{name: "unknown field", doc: `{"os":"linux","arch":"arm","cpu":4}`, wantCode: errs.Invalid, wantField: "cpu", wantMsg: "unknown field"},
		{name: "wrong-case field", doc: `{"OS":"linux","arch":"arm"}`, wantCode: errs.Invalid, wantField: "OS", wantMsg: "unknown field"},
		{name: "duplicate label", doc: `{"os":"linux","arch":"arm","labels":{"a":"1","a":"2"}}`,
			wantCode: errs.Invalid, wantField: "labels.a", wantMsg: "duplicate"},
		{name: "trailing data", doc: `{"os":"linux","arch":"arm"}{}`, wantCode: errs.Invalid, wantMsg: "after the JSON value"},
		{name: "too deep", doc: `{"os":"linux","arch":"arm","labels":{"a":{}}}`, wantCode: errs.Invalid, wantField: "labels.a", wantMsg: "limit of 2"},
		{name: "document too large", doc: `{"os":"linux","arch":"arm","features":["` + strings.Repeat(" ", MaxCapabilitiesBytes) + `"]}`,
			wantCode: errs.TooLarge, wantMsg: "limit is 16384"},
		{name: "bad executor name", doc: `{"os":"linux","arch":"arm","executors":["Shell"]}`,
			wantCode: errs.Invalid, wantField: "executors[0]", wantMsg: "[a-z0-9]"},
		{name: "too many executors", doc: `{"os":"linux","arch":"arm","executors":[` + quotedList("e", MaxExecutors+1) + `]}`,
			wantCode: errs.TooLarge, wantField: "executors", wantMsg: "limit is 16"},
		{name: "duplicates collapse before counting", doc: `{"os":"linux","arch":"arm","executors":[` + strings.Repeat(`"e",`, 40) + `"e"]}`},
		{name: "label key too long", doc: `{"os":"linux","arch":"arm","labels":{"` + long + `":"v"}}`,
			wantCode: errs.Invalid, wantField: "labels", wantMsg: "at most 63"},
		{name: "label key with space", doc: `{"os":"linux","arch":"arm","labels":{"a b":"v"}}`,
			wantCode: errs.Invalid, wantField: "labels"},
		{name: "label value too long", doc: `{"os":"linux","arch":"arm","labels":{"a":"` + strings.Repeat("v", 64) + `"}}`,
			wantCode: errs.Invalid, wantField: "labels.a", wantMsg: "limit is 63"},
		{name: "label value control char", doc: `{"os":"linux","arch":"arm","labels":{"a":"x\ny"}}`,
			wantCode: errs.Invalid, wantField: "labels.a"},
		{name: "label value with slash and colon", doc: `{"os":"linux","arch":"arm","labels":{"site":"eu/fra:2"}}`},
		{name: "too many labels", doc: `{"os":"linux","arch":"arm","labels":{` + quotedMap("k", MaxLabels+1) + `}}`,
			wantCode: errs.TooLarge, wantField: "labels", wantMsg: "more than 64"},
		{name: "empty runtime version", doc: `{"os":"linux","arch":"arm","runtimes":{"python":""}}`,
			wantCode: errs.Invalid, wantField: "runtimes.python", wantMsg: "required"},
		{name: "runtime version with space", doc: `{"os":"linux","arch":"arm","runtimes":{"python":"3.11 rc"}}`,
			wantCode: errs.Invalid, wantField: "runtimes.python"},
		{name: "runtime version too long", doc: `{"os":"linux","arch":"arm","runtimes":{"python":"` + strings.Repeat("1", 65) + `"}}`,
			wantCode: errs.Invalid, wantField: "runtimes.python", wantMsg: "limit is 64"},
		{name: "bad runtime name", doc: `{"os":"linux","arch":"arm","runtimes":{"-py":"3"}}`,
			wantCode: errs.Invalid, wantField: "runtimes"},
		{name: "negative memory", doc: `{"os":"linux","arch":"arm","memoryMiB":-1}`,
			wantCode: errs.Invalid, wantField: "memoryMiB"},
		{name: "huge disk", doc: `{"os":"linux","arch":"arm","diskMiB":1099511627777}`,
			wantCode: errs.Invalid, wantField: "diskMiB"},
		{name: "memory wrong type", doc: `{"os":"linux","arch":"arm","memoryMiB":"1G"}`,
			wantCode: errs.Invalid, wantField: "memoryMiB", wantMsg: "expected int64"},
		{name: "not an object", doc: `["linux"]`, wantCode: errs.Invalid, wantMsg: "expected a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCapabilities([]byte(tt.doc))
			checkErr(t, err, tt.wantCode, tt.wantField, tt.wantMsg)
		})
	}
}

func quotedList(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"` + prefix + strings.Repeat("x", i) + `"`
	}
	return strings.Join(parts, ",")
}

func quotedMap(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"` + prefix + strings.Repeat("x", i) + `":"v"`
	}
	return strings.Join(parts, ",")
}

func checkErr(t *testing.T, err error, code, field, msg string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want %s error", code)
	}
	if got := errs.Code(err); got != code {
		t.Errorf("code = %q, want %q (%v)", got, code, err)
	}
	if got := errs.Field(err); got != field {
		t.Errorf("field = %q, want %q (%v)", got, field, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not mention %q", err, msg)
	}
}

func TestCapabilitiesCanonical(t *testing.T) {
	c, err := DecodeCapabilities([]byte(validCaps))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"arch":"arm64","diskMiB":4096,"executors":["argv","shell"],"features":["armv8","gpu"],` +
		`"labels":{"tier":"","zone":"cn-east-1"},"memoryMiB":1024,"os":"linux",` +
		`"runtimes":{"node":"20.11.0","python":"3.11.4"}}`
	if string(got) != want {
		t.Fatalf("Canonical =\n%s\nwant\n%s", got, want)
	}

	// Same set in another order, unnormalized, built in Go: same bytes and digest.
	other := Capabilities{
		OS: "linux", Arch: "arm64",
		Executors: []string{"shell", "argv"}, Features: []string{"gpu", "armv8", "gpu"},
		Runtimes:  map[string]string{"python": "3.11.4", "node": "20.11.0"},
		Labels:    map[string]string{"zone": "cn-east-1", "tier": ""},
		MemoryMiB: 1024, DiskMiB: 4096,
	}
	otherCanon, err := other.Canonical()
	if err != nil || !bytes.Equal(otherCanon, got) {
		t.Fatalf("unnormalized Canonical = %s, %v", otherCanon, err)
	}
	if other.Executors[0] != "shell" {
		t.Fatal("Canonical mutated its receiver")
	}
	d1, err1 := c.Digest()
	d2, err2 := other.Digest()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Fatalf("digests differ: %v %v (%v %v)", d1, d2, err1, err2)
	}

	// The canonical form decodes to the same digest.
	back, err := DecodeCapabilities(got)
	if err != nil {
		t.Fatal(err)
	}
	if d3, _ := back.Digest(); d3 != d1 {
		t.Fatal("re-decoded canonical form has another digest")
	}

	// Any change changes the digest.
	changed := other
	changed.MemoryMiB++
	if d4, _ := changed.Digest(); d4 == d1 {
		t.Fatal("digest ignores memoryMiB")
	}

	if _, err := (Capabilities{OS: "linux"}).Canonical(); errs.Field(err) != "arch" {
		t.Fatalf("Canonical of invalid capabilities: %v", err)
	}
}

func TestRequirementsValidate(t *testing.T) {
	tests := []struct {
		name      string
		req       Requirements
		wantCode  string
		wantField string
		wantMsg   string
	}{
		{name: "empty", req: Requirements{}},
		{name: "full", req: Requirements{
			Required: Required{OS: "linux", Arch: "arm", Executors: []string{"shell"},
				Runtimes: map[string]string{"python": ">=3.9, <4", "node": "^20 || ^22"},
				Labels:   map[string]string{"zone": "cn-east-1"}, Features: []string{"gpu"}},
			Preferred: []Preference{{Label: "zone", Value: "cn-east-1", Weight: 100}, {Label: "zone", Value: "cn-east-2", Weight: 1}},
		}},
		{name: "bad os", req: Requirements{Required: Required{OS: "Linux"}}, wantCode: errs.Invalid, wantField: "required.os"},
		{name: "bad executor", req: Requirements{Required: Required{Executors: []string{""}}},
			wantCode: errs.Invalid, wantField: "required.executors[0]"},
		{name: "too many features", req: Requirements{Required: Required{Features: strings.Split(strings.Repeat("f,", MaxFeatures)+"f", ",")}},
			wantCode: errs.TooLarge, wantField: "required.features", wantMsg: "limit is 64"},
		{name: "empty constraint", req: Requirements{Required: Required{Runtimes: map[string]string{"python": ""}}},
			wantCode: errs.Invalid, wantField: "required.runtimes.python", wantMsg: "required"},
		{name: "long constraint", req: Requirements{Required: Required{Runtimes: map[string]string{"python": strings.Repeat(">", 129)}}},
			wantCode: errs.Invalid, wantField: "required.runtimes.python", wantMsg: "limit is 128"},
		{name: "constraint control char", req: Requirements{Required: Required{Runtimes: map[string]string{"python": ">=3\n"}}},
			wantCode: errs.Invalid, wantField: "required.runtimes.python", wantMsg: "printable"},
		{name: "bad runtime name", req: Requirements{Required: Required{Runtimes: map[string]string{"Python": ">=3"}}},
			wantCode: errs.Invalid, wantField: "required.runtimes"},
		{name: "bad label value", req: Requirements{Required: Required{Labels: map[string]string{"zone": "a b"}}},
			wantCode: errs.Invalid, wantField: "required.labels.zone"},
		{name: "weight zero", req: Requirements{Preferred: []Preference{{Label: "zone", Value: "a", Weight: 0}}},
			wantCode: errs.Invalid, wantField: "preferred[0].weight", wantMsg: "1..100"},
		{name: "weight over", req: Requirements{Preferred: []Preference{{Label: "zone", Value: "a", Weight: 101}}},
			wantCode: errs.Invalid, wantField: "preferred[0].weight", wantMsg: "1..100"},
		{name: "bad preferred label", req: Requirements{Preferred: []Preference{{Label: "Zone", Value: "a", Weight: 1}}},
			wantCode: errs.Invalid, wantField: "preferred[0].label"},
		{name: "bad preferred value", req: Requirements{Preferred: []Preference{{Label: "zone", Value: "a\tb", Weight: 1}}},
			wantCode: errs.Invalid, wantField: "preferred[0].value"},
		{name: "duplicate preference", req: Requirements{Preferred: []Preference{{Label: "z", Value: "a", Weight: 1}, {Label: "z", Value: "a", Weight: 2}}},
			wantCode: errs.Invalid, wantField: "preferred[1]", wantMsg: "duplicate"},
		{name: "too many preferences", req: Requirements{Preferred: manyPreferences(MaxPreferred + 1)},
			wantCode: errs.TooLarge, wantField: "preferred", wantMsg: "limit is 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.req.Validate(), tt.wantCode, tt.wantField, tt.wantMsg)
		})
	}
}

func manyPreferences(n int) []Preference {
	out := make([]Preference, n)
	for i := range out {
		out[i] = Preference{Label: "zone", Value: "z" + strings.Repeat("x", i), Weight: 1}
	}
	return out
}

func TestRequirementsNormalize(t *testing.T) {
	r := Requirements{
		Required: Required{Executors: []string{"shell", "argv", "shell"}, Features: []string{},
			Labels: map[string]string{}},
		Preferred: []Preference{{Label: "zone", Value: "b", Weight: 5}, {Label: "arch", Value: "x", Weight: 1}, {Label: "zone", Value: "a", Weight: 9}},
	}
	n := r.Normalize()
	if got := strings.Join(n.Required.Executors, ","); got != "argv,shell" {
		t.Errorf("executors = %s", got)
	}
	if n.Required.Features != nil || n.Required.Labels != nil {
		t.Errorf("empty collections not nil: %#v", n.Required)
	}
	var order []string
	for _, p := range n.Preferred {
		order = append(order, p.Label+"="+p.Value)
	}
	if got := strings.Join(order, ","); got != "arch=x,zone=a,zone=b" {
		t.Errorf("preferred order = %s", got)
	}
	if r.Preferred[0].Value != "b" || r.Required.Executors[0] != "shell" {
		t.Error("Normalize mutated its receiver")
	}
	if !(Requirements{Required: Required{Labels: map[string]string{}}}).IsZero() {
		t.Error("requirements with only empty collections are not zero")
	}
	if (Requirements{Preferred: []Preference{{Label: "a", Value: "b", Weight: 1}}}).IsZero() {
		t.Error("requirements with a preference are zero")
	}
}

func TestPinnedWorker(t *testing.T) {
	r := Requirements{Required: Required{OS: "linux", Labels: map[string]string{WorkerLabel: "w-1", "zone": "a"}}}
	w, rest := r.PinnedWorker()
	if w != "w-1" || rest.Required.Labels[WorkerLabel] != "" || rest.Required.Labels["zone"] != "a" || rest.Required.OS != "linux" {
		t.Fatalf("%q %+v", w, rest)
	}
	if r.Required.Labels[WorkerLabel] != "w-1" {
		t.Fatal("the input changed")
	}
	w, rest = Requirements{Required: Required{Labels: map[string]string{WorkerLabel: "w-2"}}}.PinnedWorker()
	if w != "w-2" || !rest.IsZero() {
		t.Fatalf("%q %+v", w, rest)
	}
	if w, rest = (Requirements{}).PinnedWorker(); w != "" || !rest.IsZero() {
		t.Fatalf("%q %+v", w, rest)
	}
}
