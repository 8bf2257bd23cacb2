package env

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/mask"
	"github.com/ql3/ql3/core/spec"
)

func TestValidateName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		msg  string // part of the refusal
	}{
		{"JD_COOKIE", true, ""},
		{"_x9", true, ""},
		{"a", true, ""},
		{"", false, "required"},
		{"9A", false, "must match"},
		{"A-B", false, "must match"},
		{"A=B", false, "'='"},
		{"A\x00", false, "NUL"},
		{"QL3_X", false, "QL3_ prefix is reserved"},
		{"ql3_x", false, "QL3_ prefix is reserved"},
		{"QL3", true, ""},
		{strings.Repeat("A", MaxNameBytes), true, ""},
		{strings.Repeat("A", MaxNameBytes+1), false, "limit is 256"},
	}
	for _, tc := range cases {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if err != nil && (errs.Field(err) != "name" || errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("ValidateName(%q) = %v (field %q), want field name and %q", tc.name, err, errs.Field(err), tc.msg)
		}
	}
}

func TestValidateValue(t *testing.T) {
	cases := []struct {
		value string
		ok    bool
		msg   string
	}{
		{"", true, ""},
		{"pt_key=abc;pt_pin=def;", true, ""},
		{"multi\nline", true, ""},
		{strings.Repeat("v", MaxValueBytes), true, ""},
		{strings.Repeat("v", MaxValueBytes+1), false, "limit is 131072"},
		{"a\x00b", false, "NUL"},
		{"\xff", false, "UTF-8"},
	}
	for _, tc := range cases {
		err := ValidateValue(tc.value)
		if (err == nil) != tc.ok || (err != nil && (errs.Field(err) != "value" || !strings.Contains(err.Error(), tc.msg))) {
			t.Errorf("ValidateValue(%.20q) = %v, want ok=%v %q", tc.value, err, tc.ok, tc.msg)
		}
	}
}

func TestValidateEntryFields(t *testing.T) {
	ok := Entry{Name: "A", Value: "v", Remarks: "account 1", Labels: []string{"jd", "prod"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		e     Entry
		field string
	}{
		{Entry{Name: "A", Remarks: "two\nlines"}, "remarks"},
		{Entry{Name: "A", Remarks: strings.Repeat("r", MaxRemarksBytes+1)}, "remarks"},
		{Entry{Name: "A", Labels: []string{"a", "a"}}, "labels"},
		{Entry{Name: "A", Labels: []string{""}}, "labels"},
		{Entry{Name: "A", Labels: []string{"a,b"}}, "labels"},
		{Entry{Name: "A", Labels: make([]string, MaxLabels+1)}, "labels"},
	}
	for _, tc := range bad {
		if err := tc.e.Validate(); errs.Field(err) != tc.field {
			t.Errorf("%+v: %v, want field %s", tc.e, err, tc.field)
		}
	}
}

// TestResolveQingLongOrder: enabled same-name entries join with "&",
// pinned desc, position desc, created asc, id asc; disabled ones are out.
func TestResolveQingLongOrder(t *testing.T) {
	entries := []Entry{
		{ID: "e", Name: "A", Value: "old-low", Enabled: true, Position: 1, CreatedAtMs: 1},
		{ID: "d", Name: "A", Value: "high", Enabled: true, Position: 9, CreatedAtMs: 5},
		{ID: "c", Name: "A", Value: "pinned", Enabled: true, Pinned: true, Position: 0, CreatedAtMs: 9},
		{ID: "b", Name: "A", Value: "tie-newer", Enabled: true, Position: 1, CreatedAtMs: 2},
		{ID: "a", Name: "A", Value: "tie-id", Enabled: true, Position: 1, CreatedAtMs: 2},
		{ID: "f", Name: "A", Value: "disabled", Enabled: false, Position: 100},
		{ID: "g", Name: "B", Value: "b", Enabled: true},
		{ID: "h", Name: "C", Value: "off", Enabled: false},
	}
	vars, err := Resolve(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := []Variable{{"A", "pinned&high&old-low&tie-id&tie-newer"}, {"B", "b"}}
	if len(vars) != len(want) || vars[0] != want[0] || vars[1] != want[1] {
		t.Fatalf("Resolve = %+v, want %+v", vars, want)
	}
}

func TestCheckSizes(t *testing.T) {
	half := MaxJoinedBytes / 2
	cases := []struct {
		name  string
		sizes []Size
		msg   string // "" = ok
	}{
		{"empty", nil, ""},
		{"one max value", []Size{{"A", MaxValueBytes}}, ""},
		{"joined exactly", []Size{{"A", half}, {"A", half - 1}}, ""},
		{"joined over", []Size{{"A", half}, {"A", half}}, "limit is 131072"},
		{"process over", func() []Size {
			var s []Size
			for i := range 9 {
				s = append(s, Size{Name: "V" + string(rune('A'+i)), ValueBytes: MaxValueBytes})
			}
			return s
		}(), "limit is 1048576"},
	}
	for _, tc := range cases {
		err := CheckSizes(tc.sizes)
		if (tc.msg == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.msg) || errs.Code(err) != errs.Invalid)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
}

func TestCompose(t *testing.T) {
	vars := []Variable{{"A", "v1&v2"}, {"B", "store-b"}, {"C", "c"}}
	inline := map[string]string{"B": "inline-b", "MODE": "fast"}
	cases := []struct {
		name  string
		scope *spec.EnvScope
		want  map[string]string
	}{
		{"every entry, store wins", nil, map[string]string{"A": "v1&v2", "B": "store-b", "C": "c", "MODE": "fast"}},
		{"allowlist", &spec.EnvScope{Use: []string{"A"}}, map[string]string{"A": "v1&v2", "B": "inline-b", "MODE": "fast"}},
		{"inline wins", &spec.EnvScope{InlineWins: true}, map[string]string{"A": "v1&v2", "B": "inline-b", "C": "c", "MODE": "fast"}},
		{"allowlist of an absent name", &spec.EnvScope{Use: []string{"Z"}}, map[string]string{"B": "inline-b", "MODE": "fast"}},
	}
	for _, tc := range cases {
		got, err := Compose(vars, tc.scope, inline)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", tc.name, k, got[k], v)
			}
		}
	}
	big := strings.Repeat("x", 64<<10)
	var many []Variable
	for i := range 16 {
		many = append(many, Variable{Name: "V" + string(rune('A'+i)), Value: big})
	}
	if _, err := Compose(many, nil, map[string]string{"X": big}); err == nil || errs.Field(err) != "env" || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("over 1 MiB: %v", err)
	}
}

func TestSecrets(t *testing.T) {
	entries := []Entry{
		{ID: "1", Name: "A", Value: "pt_key=1&pt_key=2&ab", Enabled: true},
		{ID: "2", Name: "A", Value: "second", Enabled: true, CreatedAtMs: 1},
		{ID: "3", Name: "B", Value: "off-value", Enabled: false},
		{ID: "4", Name: "C", Value: "abc", Enabled: true},
		{ID: "5", Name: "D", Value: "x", Enabled: true},
		{ID: "6", Name: "D", Value: "yz", Enabled: true, CreatedAtMs: 1},
	}
	got := map[string]bool{}
	for _, s := range Secrets(entries) {
		got[string(s)] = true
	}
	for _, want := range []string{"pt_key=1&pt_key=2&ab", "pt_key=1", "pt_key=2", "second", "pt_key=1&pt_key=2&ab&second", "x&yz"} {
		if !got[want] {
			t.Errorf("missing %q in %v", want, got)
		}
	}
	for _, not := range []string{"ab", "off-value", "abc", "x", "yz"} {
		if got[not] {
			t.Errorf("%q must not be a secret", not)
		}
	}
}

// TestSecretsOfVariables: masking with what a worker derives from the
// joined variables it gets leaves no maskable part of anything the edge
// masks from the entries.
func TestSecretsOfVariables(t *testing.T) {
	entries := []Entry{
		{ID: "1", Name: "A", Value: "pt_key=1", Enabled: true},
		{ID: "2", Name: "A", Value: "pt_key=2&ab", Enabled: true, CreatedAtMs: 1},
		{ID: "3", Name: "B", Value: "xyz", Enabled: true},
	}
	vars, err := Resolve(entries)
	if err != nil {
		t.Fatal(err)
	}
	worker := mask.New(SecretsOfVariables(vars))
	for _, s := range Secrets(entries) {
		masked, _ := worker.Mask(s)
		for part := range strings.SplitSeq(string(s), Separator) {
			if len(part) >= MinMaskBytes && strings.Contains(string(masked), part) {
				t.Errorf("the edge masks %q; with the worker's set %q survives in %q", s, part, masked)
			}
		}
	}
	got := map[string]bool{}
	for _, s := range SecretsOfVariables(vars) {
		got[string(s)] = true
	}
	if got["ab"] || got["xyz"] || !got["pt_key=1&pt_key=2&ab"] {
		t.Errorf("worker secrets %v", got)
	}
}
