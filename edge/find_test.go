package edge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

func TestSearchTextAndCommandText(t *testing.T) {
	sh := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "node JD_Sign.js"}}
	av := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/usr/bin/Python3", Args: []string{"-u", "Ä.py"}}}
	for _, c := range []struct {
		name   string
		c      spec.Command
		labels []string
		want   string
	}{
		{"京东签到", sh, nil, "京东签到\nnode jd_sign.js"},
		{"Sync", av, []string{"Daily", "备份"}, "sync\n/usr/bin/python3 -u Ä.py\ndaily\n备份"},
		{"bare", spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/true"}}, nil, "bare\n/bin/true"},
	} {
		if got := SearchText(c.name, c.c, c.labels); got != c.want {
			t.Errorf("SearchText(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCheckLabels(t *testing.T) {
	got, err := CheckLabels([]string{" 京东 ", "daily", "e\u0301"})
	if err != nil || strings.Join(got, "|") != "京东|daily|é" {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, c := range []struct {
		in    []string
		field string
	}{
		{[]string{"a", "a"}, "labels[1]"},
		{[]string{"a,b"}, "labels[0]"},
		{[]string{""}, "labels[0]"},
		{[]string{strings.Repeat("长", MaxLabelChars+1)}, "labels[0]"},
		{make([]string, MaxTaskLabels+1), "labels"},
		{[]string{"ok", "a\u200bb"}, "labels[1]"},
	} {
		if _, err := CheckLabels(c.in); errs.Code(err) != errs.Invalid || errs.Field(err) != c.field {
			t.Errorf("%q: %v, want invalid %s", c.in, err, c.field)
		}
	}
}

// FuzzFindInputs: a search that passes is folded, bounded and free of
// control characters, and checking it again changes nothing; labels that
// pass pass again unchanged.
func FuzzFindInputs(f *testing.F) {
	for _, s := range []string{"签到", "JD_Sign", " a ", "\x01", "\xff", strings.Repeat("x", 200), "e\u0301", "a,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := CheckSearch("q", s)
		if err == nil && q != "" {
			if q != FoldSearch(q) || !utf8.ValidString(q) || utf8.RuneCountInString(q) > MaxSearchChars || strings.IndexFunc(q, unicode.IsControl) >= 0 {
				t.Fatalf("CheckSearch(%q) = %q", s, q)
			}
			if again, err := CheckSearch("q", q); err != nil || again != q {
				t.Fatalf("CheckSearch not stable: %q → %q → %q, %v", s, q, again, err)
			}
		}
		ls, err := CheckLabels(strings.Split(s, "|"))
		if err == nil {
			again, err := CheckLabels(ls)
			if err != nil || strings.Join(again, "|") != strings.Join(ls, "|") {
				t.Fatalf("CheckLabels not stable: %q → %q → %q, %v", s, ls, again, err)
			}
		}
	})
}
