package env

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestParseLines(t *testing.T) {
	text := "# cookies\n\nJD_COOKIE=pt_key=1;pt_pin=a;\r\nexport JD_COOKIE=\"pt_key=2\"\n  B='quoted'\nC=\nD=a=b=c\nE=\"half\n"
	got, err := ParseLines(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{{"JD_COOKIE", "pt_key=1;pt_pin=a;"}, {"JD_COOKIE", "pt_key=2"}, {"B", "quoted"}, {"C", ""}, {"D", "a=b=c"}, {"E", `"half`}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseLinesErrors(t *testing.T) {
	cases := []struct{ text, field, msg string }{
		{"A=1\nnoequals\n", "lines[2]", "NAME=value"},
		{"QL3_X=1", "lines[1].name", "reserved"},
		{"A B=1", "lines[1].name", "must match"},
		{"A=" + strings.Repeat("v", MaxValueBytes+1), "lines[1].value", "limit is 131072"},
		{"A=a\x00b", "lines[1].value", "NUL"},
		{"=v", "lines[1].name", "required"},
	}
	for _, tc := range cases {
		_, err := ParseLines(tc.text)
		if err == nil || errs.Field(err) != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%.30q: %v (field %q), want %s %q", tc.text, err, errs.Field(err), tc.field, tc.msg)
		}
	}
}

func TestFormatLinesRoundTrip(t *testing.T) {
	in := []Line{{"A", "plain"}, {"A", `"dq"`}, {"B", "'sq'"}, {"C", ""}, {"D", `'mixed"`}, {"E", " spaced "}}
	text, err := FormatLines(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLines(text)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if back[i] != in[i] {
			t.Errorf("%d: %+v came back as %+v", i, in[i], back[i])
		}
	}
	if _, err := FormatLines([]Line{{"A", "x\ny"}}); errs.Field(err) != "lines[1]" {
		t.Fatalf("a line break: %v", err)
	}
}

// FuzzParseLines: never panics; what it accepts is valid and formats back
// to text that parses to the same lines.
func FuzzParseLines(f *testing.F) {
	for _, s := range []string{"A=1\nB=2", "export X=\"y\"", "# c\n\n=", "A='\"'", "QL3_A=1", "A=\r\n", "A=\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines, err := ParseLines(text)
		if err != nil {
			if errs.Field(err) == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		for _, l := range lines {
			if ValidateName(l.Name) != nil || ValidateValue(l.Value) != nil {
				t.Fatalf("accepted an invalid line %+v", l)
			}
		}
		out, err := FormatLines(lines)
		if err != nil {
			return // a value with a CR inside a line
		}
		back, err := ParseLines(out)
		if err != nil || len(back) != len(lines) {
			t.Fatalf("round trip of %q: %v %+v", out, err, back)
		}
		for i := range lines {
			if back[i] != lines[i] {
				t.Fatalf("round trip: %+v became %+v", lines[i], back[i])
			}
		}
	})
}
