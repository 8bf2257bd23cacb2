package find

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/spec"
)

func TestTextAndSearch(t *testing.T) {
	sh := spec.Command{Shell: &spec.Shell{Command: "task JD_sign.js"}}
	argv := spec.Command{Argv: &spec.Argv{File: "/usr/bin/Python3", Args: []string{"Run.py", "--x"}}}
	for _, c := range []struct {
		name, q string
		sp      spec.Command
		labels  []string
		hit     bool
	}{
		{"京东签到", "签到", sh, nil, true},
		{"京东签到", "jd_sign", sh, nil, true},
		{"Backup", "BACKUP", argv, nil, true},
		{"x", "python3 run.py", argv, nil, true},
		{"x", "daily", sh, []string{"Daily"}, true},
		{"x", "nightly", sh, []string{"Daily"}, false},
		{"ÉTÉ", "été", sh, nil, false}, // only ASCII folds, as in both databases
	} {
		q, err := CheckSearch("q", c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(Text(c.name, c.sp, c.labels), q); got != c.hit {
			t.Errorf("%q in %q: %v, want %v", c.q, c.name, got, c.hit)
		}
	}
	for _, bad := range []string{strings.Repeat("长", MaxSearchChars+1), "a\x00b", "\xff"} {
		if _, err := CheckSearch("q", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if q, err := CheckSearch("q", "   "); q != "" || err != nil {
		t.Fatalf("blank: %q %v", q, err)
	}
}

func FuzzCheckSearch(f *testing.F) {
	for _, s := range []string{"签到", "JD", " a ", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got, err := CheckSearch("q", q)
		if err != nil {
			return
		}
		if Fold(got) != got || strings.TrimSpace(got) != got {
			t.Fatalf("%q → %q is not in matching form", q, got)
		}
	})
}
