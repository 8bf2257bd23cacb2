// Package subdef is the definition of a subscription (ADR 0054, ADR
// 0061), shared by both binaries: its kinds, credential kinds and the one
// validation of its fields (URLs without passwords, branch names git
// accepts, slugs, cron schedules, filters, proxies, time zones).
package subdef

import (
	"regexp"
	"strings"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/core/weburl"
)

// Subscription kinds (ADR 0054).
const (
	Git  = "git"  // a git repository, one branch
	File = "file" // one raw file fetched by URL
)

// Credential kinds: what the env store entry named by Credential holds.
const (
	Token  = "token"   // an HTTPS token (sent as the password)
	SSHKey = "ssh_key" // an SSH private key
)

// Def is what a person (or an import) says of a subscription: the input
// of a create and (full replacement) of an update. An empty Slug is
// derived from the URL.
type Def struct {
	Name           string
	Slug           string
	Kind           string
	URL            string
	Branch         string
	Credential     string
	CredentialKind string
	Filter         subplan.Filter
	Schedule       string
	AutoAdd        bool
	AutoRemove     bool
	RemoveMode     string
	DefaultCron    string
	Proxy          string
	TimeZone       string
	Enabled        bool
}

var (
	slugRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	branchRe  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}$`)
	scpLikeRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9.-]+:[A-Za-z0-9_~][A-Za-z0-9._/~-]*$`)
	credRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// Check validates a subscription and returns it normalized
// (name NFC, slug derived when empty, remove mode defaulted).
func Check(in Def) (Def, error) {
	n, err := names.CheckDisplay("name", in.Name)
	if err != nil {
		return in, err
	}
	in.Name = n
	switch in.Kind {
	case Git:
		if err := checkGitURL(in.URL); err != nil {
			return in, err
		}
		if in.Branch != "" && (!branchRe.MatchString(in.Branch) || strings.Contains(in.Branch, "..") ||
			strings.HasSuffix(in.Branch, ".lock") || strings.HasSuffix(in.Branch, "/")) {
			return in, errs.Invalidf("branch", "%.64q is not a branch name git accepts", in.Branch)
		}
	case File:
		if err := CheckURL("url", in.URL, "http", "https", "file"); err != nil {
			return in, err
		}
		if in.Branch != "" {
			return in, errs.Invalidf("branch", "only a git subscription has a branch")
		}
	default:
		return in, errs.Invalidf("kind", "must be %q or %q, got %.32q", Git, File, in.Kind)
	}
	if in.Slug == "" {
		in.Slug = SlugFromURL(in.URL)
	}
	if !slugRe.MatchString(in.Slug) {
		return in, errs.Invalidf("slug", "must be 1..64 of A-Z a-z 0-9 . _ - and start with a letter or digit, got %.64q", in.Slug)
	}
	switch {
	case in.Credential == "" && in.CredentialKind != "":
		return in, errs.Invalidf("credentialKind", "needs a credential")
	case in.Credential != "" && !credRe.MatchString(in.Credential):
		return in, errs.Invalidf("credential", "must name an env store entry, got %.64q", in.Credential)
	case in.Credential != "" && in.CredentialKind != Token && in.CredentialKind != SSHKey:
		return in, errs.Invalidf("credentialKind", "must be %q or %q", Token, SSHKey)
	case in.Credential != "" && in.Kind == File && in.CredentialKind != Token:
		return in, errs.Invalidf("credentialKind", "a file subscription takes a token only")
	}
	if err := in.Filter.Validate(); err != nil {
		return in, errs.Prefix("filter", err)
	}
	for _, c := range []struct{ field, expr string }{{"schedule", in.Schedule}, {"defaultCron", in.DefaultCron}} {
		if c.expr == "" {
			continue
		}
		if _, err := cron.Parse(c.expr, time.UTC); err != nil {
			return in, errs.Invalidf(c.field, "%.64q is not a cron expression: %v", c.expr, err)
		}
	}
	switch in.RemoveMode {
	case "":
		in.RemoveMode = subplan.RemoveDisable
	case subplan.RemoveDisable, subplan.RemoveDelete:
	default:
		return in, errs.Invalidf("removeMode", "must be %q or %q, got %.32q", subplan.RemoveDisable, subplan.RemoveDelete, in.RemoveMode)
	}
	if in.Proxy != "" {
		if err := CheckURL("proxy", in.Proxy, "http", "https", "socks5", "socks5h"); err != nil {
			return in, err
		}
	}
	if in.TimeZone != "" {
		if _, err := time.LoadLocation(in.TimeZone); err != nil || in.TimeZone == "Local" {
			return in, errs.Invalidf("timeZone", "%.64q is not an IANA time zone", in.TimeZone)
		}
	}
	return in, nil
}

// checkGitURL accepts https, http, ssh, git and file URLs and the scp-like
// user@host:path form, without credentials in the URL (they come from the
// env store) and never starting with '-' (git would read an option).
func checkGitURL(u string) error {
	if scpLikeRe.MatchString(u) {
		return nil
	}
	return CheckURL("url", u, "https", "http", "ssh", "git", "file")
}

// CheckURL checks a URL of one of schemes (core/weburl.Check).
func CheckURL(field, raw string, schemes ...string) error {
	return weburl.Check(field, raw, schemes...)
}

// SlugFromURL derives a folder name from a URL's last path element
// ("https://h/o/scripts.git" → "scripts"), "sub" when nothing usable is left.
func SlugFromURL(u string) string {
	u = strings.TrimRight(u, "/")
	if i := strings.LastIndexAny(u, "/:"); i >= 0 {
		u = u[i+1:]
	}
	u = strings.TrimSuffix(u, ".git")
	var b strings.Builder
	for _, r := range u {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "._-")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "sub"
	}
	return s
}
