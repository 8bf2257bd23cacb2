// Package depcmd holds the rules of dependency installs (ADR 0055, 0062)
// both binaries share: which names and versions are packages of a kind
// (nothing that can be a shell word break or an option), the registry and
// proxy URLs, and the shell line of each action (npm into a prefix, pip
// into a virtual environment, the host's apk, opkg or apt-get). The edge
// runs the line on its host; a worker runs the cluster's line under its
// per-project deps directory ($QL3_DEPS_DIR).
package depcmd

import (
	"regexp"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/weburl"
)

// Kinds of a dependency.
const (
	Node   = "node"
	Python = "python"
	Linux  = "linux"
)

// Actions: each is a Run of the dependency's system task.
const (
	Install   = "install"
	Reinstall = "reinstall"
	Remove    = "remove"
)

// Dependency is a package of a kind, at a version ("" = the newest).
type Dependency struct {
	Kind    string
	Name    string
	Version string
}

// Settings are the registry and proxy of one kind's installs.
type Settings struct {
	Kind     string
	Registry string // npm registry / pip index URL (file:// = a local wheel folder), "" = the tool's default
	Proxy    string
}

var (
	npmNameRe = regexp.MustCompile(`^(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]{0,213}$`)
	pyNameRe  = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,213})(?:\[[A-Za-z0-9,._-]{1,64}\])?$`)
	linuxRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9+._-]{0,127}$`)
	verRe     = regexp.MustCompile(`^[A-Za-z0-9.*^~<>=!+_-]{1,64}$`)
)

// Check validates a dependency: a name the kind's installer accepts, a
// version made of version characters only (installs run through a shell:
// nothing here can be an option or a word break). It returns d trimmed.
func Check(d Dependency) (Dependency, error) {
	d.Name = strings.TrimSpace(d.Name)
	d.Version = strings.TrimSpace(d.Version)
	var ok bool
	switch d.Kind {
	case Node:
		ok = npmNameRe.MatchString(d.Name)
	case Python:
		ok = pyNameRe.MatchString(d.Name)
	case Linux:
		ok = linuxRe.MatchString(d.Name)
	default:
		return d, errs.Invalidf("kind", "must be node, python or linux, got %.32q", d.Kind)
	}
	if !ok {
		return d, errs.Invalidf("name", "%.64q is not a %s package name", d.Name, d.Kind)
	}
	if d.Version != "" && (!verRe.MatchString(d.Version) || strings.HasPrefix(d.Version, "-")) {
		return d, errs.Invalidf("version", "%.64q is not a version (1..64 of A-Z a-z 0-9 . * ^ ~ < > = ! + _ -)", d.Version)
	}
	return d, nil
}

// CheckAction validates an action name.
func CheckAction(action string) error {
	if action != Install && action != Reinstall && action != Remove {
		return errs.Invalidf("action", "must be install, reinstall or remove, got %.32q", action)
	}
	return nil
}

// CheckSettings validates a kind's registry and proxy.
func CheckSettings(s Settings) (Settings, error) {
	if _, err := Check(Dependency{Kind: s.Kind, Name: "x"}); err != nil {
		return s, err
	}
	if s.Registry != "" {
		if err := CheckURL("registry", s.Registry, "http", "https", "file"); err != nil {
			return s, err
		}
	}
	if s.Proxy != "" {
		if err := CheckURL("proxy", s.Proxy, "http", "https", "socks5", "socks5h"); err != nil {
			return s, err
		}
	}
	return s, nil
}

// CheckURL validates a URL of one of schemes (core/weburl.Check).
func CheckURL(field, raw string, schemes ...string) error {
	return weburl.Check(field, raw, schemes...)
}

// PackageManager is a host's linux package manager.
type PackageManager struct {
	Name    string // apk | opkg | apt-get
	Install string // the command line before the names
	Remove  string
	VerSep  string // name<sep>version; "" = versions not supported
}

// Managers are the package managers ql3 knows, in the order it prefers.
var Managers = []PackageManager{
	{Name: "apk", Install: "apk add --no-cache", Remove: "apk del", VerSep: "="},
	{Name: "opkg", Install: "opkg install", Remove: "opkg remove"},
	{Name: "apt-get", Install: "DEBIAN_FRONTEND=noninteractive apt-get install -y -q", Remove: "apt-get remove -y -q", VerSep: "="},
}

// FindPackageManager returns the first of Managers lookPath (the host's
// exec.LookPath) finds.
func FindPackageManager(lookPath func(string) (string, error)) (PackageManager, bool) {
	for _, m := range Managers {
		if _, err := lookPath(m.Name); err == nil {
			return m, true
		}
	}
	return PackageManager{}, false
}

// Quote is a POSIX shell single-quoted word.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
