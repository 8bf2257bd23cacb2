// Package weburl checks the URLs users give ql3 for the outside world —
// subscriptions' repositories and proxies, dependency registries — with
// one rule for both binaries: bounded, no option-like or blank text, a
// host, no password (credentials live in the env store).
package weburl

import (
	"net/url"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Check checks raw is a URL of one of schemes, at most 2048 bytes,
// with a host (but for file), never starting with '-' and without a
// password.
func Check(field, raw string, schemes ...string) error {
	if len(raw) > 2048 {
		return errs.TooLargef(field, "is %d bytes, limit is 2048", len(raw))
	}
	if strings.HasPrefix(raw, "-") || strings.ContainsAny(raw, " \t\r\n\x00") {
		return errs.Invalidf(field, "%.64q is not a URL", raw)
	}
	p, err := url.Parse(raw)
	if err != nil || p.Scheme == "" {
		return errs.Invalidf(field, "%.64q is not a URL", raw)
	}
	ok := false
	for _, s := range schemes {
		ok = ok || p.Scheme == s
	}
	if !ok {
		return errs.Invalidf(field, "scheme must be one of %s, got %.16q", strings.Join(schemes, ", "), p.Scheme)
	}
	if p.Scheme != "file" && p.Host == "" {
		return errs.Invalidf(field, "%.64q has no host", raw)
	}
	if _, has := p.User.Password(); has {
		return errs.Invalidf(field, "must not carry a password: name an env store entry in credential instead")
	}
	return nil
}
