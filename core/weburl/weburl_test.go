package weburl

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestCheck(t *testing.T) {
	long := "https://h/" + string(make([]byte, 2048))
	for _, c := range []struct {
		raw  string
		code string
	}{
		{"https://example.org/o/r.git", ""},
		{"file:///srv/repo", ""},
		{"http://127.0.0.1:4873/", ""},
		{"ftp://example.org/x", errs.Invalid},
		{"-uhttps://x", errs.Invalid},
		{"https://exa mple.org", errs.Invalid},
		{"https:///nohost", errs.Invalid},
		{"https://u:secret@example.org/r.git", errs.Invalid},
		{"not a url", errs.Invalid},
		{long, errs.TooLarge},
	} {
		err := Check("url", c.raw, "https", "http", "file")
		if errs.Code(err) != c.code || (err != nil && errs.Field(err) != "url") {
			t.Errorf("%.40q: %v, want code %q naming url", c.raw, err, c.code)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"https://example.org/x", "file:///x", "-x", "https://u:p@h/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if err := Check("url", raw, "https", "file"); err == nil && (len(raw) > 2048 || raw == "" || raw[0] == '-') {
			t.Fatalf("%q accepted", raw)
		}
	})
}
