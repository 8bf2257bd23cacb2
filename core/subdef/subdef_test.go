package subdef

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
)

func TestCheck(t *testing.T) {
	ok := Def{Name: "scripts", Kind: Git, URL: "https://example.org/o/scripts.git", Enabled: true}
	cases := []struct {
		name  string
		edit  func(*Def)
		field string // "" = accepted
	}{
		{"plain git", func(*Def) {}, ""},
		{"scp-like", func(d *Def) { d.URL = "git@example.org:o/scripts.git" }, ""},
		{"file url", func(d *Def) { d.Kind, d.URL = File, "https://example.org/a.js" }, ""},
		{"unknown kind", func(d *Def) { d.Kind = "svn" }, "kind"},
		{"password in url", func(d *Def) { d.URL = "https://u:p@example.org/o.git" }, "url"},
		{"option-like url", func(d *Def) { d.URL = "--upload-pack=x" }, "url"},
		{"ext url", func(d *Def) { d.URL = "ext::sh -c id" }, "url"},
		{"no host", func(d *Def) { d.URL = "https:///o.git" }, "url"},
		{"branch ..", func(d *Def) { d.Branch = "a..b" }, "branch"},
		{"branch option", func(d *Def) { d.Branch = "-x" }, "branch"},
		{"branch on a file", func(d *Def) { d.Kind, d.URL, d.Branch = File, "https://example.org/a.js", "main" }, "branch"},
		{"bad slug", func(d *Def) { d.Slug = "../x" }, "slug"},
		{"credential kind alone", func(d *Def) { d.CredentialKind = Token }, "credentialKind"},
		{"credential name", func(d *Def) { d.Credential, d.CredentialKind = "1bad", Token }, "credential"},
		{"ssh key on a file", func(d *Def) {
			d.Kind, d.URL, d.Credential, d.CredentialKind = File, "https://example.org/a.js", "KEY", SSHKey
		}, "credentialKind"},
		{"schedule", func(d *Def) { d.Schedule = "not cron" }, "schedule"},
		{"default cron", func(d *Def) { d.DefaultCron = "61 * * * *" }, "defaultCron"},
		{"remove mode", func(d *Def) { d.RemoveMode = "shred" }, "removeMode"},
		{"proxy scheme", func(d *Def) { d.Proxy = "ftp://p:1" }, "proxy"},
		{"time zone", func(d *Def) { d.TimeZone = "Local" }, "timeZone"},
		{"filter glob", func(d *Def) { d.Filter = subplan.Filter{Include: []string{"["}} }, "filter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := ok
			c.edit(&d)
			got, err := Check(d)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.RemoveMode != subplan.RemoveDisable || got.Slug == "" {
					t.Fatalf("not normalized: %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %+v, want a %s error", d, c.field)
			}
			if errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v, want invalid naming %s", err, c.field)
			}
		})
	}
}

func TestSlugFromURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.org/o/scripts.git": "scripts",
		"git@example.org:o/my repo.git":     "my_repo",
		"https://example.org/":              "example.org",
		"file:///":                          "sub",
		"https://example.org/..git":         "sub",
	} {
		if got := SlugFromURL(in); got != want {
			t.Errorf("SlugFromURL(%q) = %q, want %q", in, got, want)
		}
	}
}
