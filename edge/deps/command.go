// Package deps installs the packages scripts need (ADR 0055): node
// packages into the scripts folder's node_modules (npm), python packages
// into a virtual environment whose bin folder leads the PATH of every
// process the edge starts, linux packages through the host's package
// manager. Every install, reinstall and removal is a Run of the
// dependency's system task: a shell line built here from validated
// names, with its log, history and cancel.
package deps

import (
	"net/url"
	"os/exec"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
)

// Places are where packages go.
type Places struct {
	ScriptsRoot string // node: <root>/node_modules, <root>/package.json
	PythonVenv  string // python: the virtual environment
}

// PackageManager is a host's linux package manager.
type PackageManager struct {
	Name    string // apk | opkg | apt-get
	Install string // the command line before the names
	Remove  string
	VerSep  string // name<sep>version; "" = versions not supported
}

var managers = []PackageManager{
	{Name: "apk", Install: "apk add --no-cache", Remove: "apk del", VerSep: "="},
	{Name: "opkg", Install: "opkg install", Remove: "opkg remove"},
	{Name: "apt-get", Install: "DEBIAN_FRONTEND=noninteractive apt-get install -y -q", Remove: "apt-get remove -y -q", VerSep: "="},
}

// FindPackageManager returns the first of apk, opkg and apt-get the host
// has (lookPath is exec.LookPath in production).
func FindPackageManager(lookPath func(string) (string, error)) (PackageManager, bool) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	for _, m := range managers {
		if _, err := lookPath(m.Name); err == nil {
			return m, true
		}
	}
	return PackageManager{}, false
}

// quote is a POSIX shell single-quoted word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Command is the shell line of an action. The name and version were
// validated by edge.CheckDependency (no spaces, quotes or leading '-'),
// and are quoted all the same.
func Command(d edge.Dependency, action string, set edge.DependencySettings, at Places, pm *PackageManager) (string, error) {
	if _, err := edge.CheckDependency(edge.NewDependency{Kind: d.Kind, Name: d.Name, Version: d.Version}); err != nil {
		return "", err
	}
	var proxyEnv string
	if set.Proxy != "" {
		proxyEnv = "export HTTP_PROXY=" + quote(set.Proxy) + " HTTPS_PROXY=" + quote(set.Proxy) +
			" http_proxy=" + quote(set.Proxy) + " https_proxy=" + quote(set.Proxy) + "\n"
	}
	remove := action == edge.DepRemove
	switch d.Kind {
	case edge.DependencyNode:
		spec := d.Name
		if d.Version != "" {
			spec += "@" + d.Version
		}
		reg := ""
		if set.Registry != "" {
			reg = " --registry " + quote(set.Registry)
		}
		base := "npm --prefix " + quote(at.ScriptsRoot) + " --no-audit --no-fund --loglevel=http" + reg
		if remove {
			return proxyEnv + "set -e\n" + base + " uninstall --save " + quote(d.Name) + "\n", nil
		}
		return proxyEnv + "set -e\nmkdir -p " + quote(at.ScriptsRoot) + "\n" + base + " install --save " + quote(spec) + "\n", nil
	case edge.DependencyPython:
		py := quote(at.PythonVenv + "/bin/python3")
		// The venv sees the system's packages, and its pip is the
		// system's when there is one (no download, no ensurepip); else
		// ensurepip puts one in.
		venv := "[ -x " + py + " ] || python3 -m venv --system-site-packages --without-pip " + quote(at.PythonVenv) + "\n" +
			py + " -m pip --version >/dev/null 2>&1 || " + py + " -m ensurepip --default-pip\n"
		pip := py + " -m pip --disable-pip-version-check --no-input"
		if remove {
			return proxyEnv + "set -e\n" + venv + pip + " uninstall -y " + quote(d.Name) + "\n", nil
		}
		spec := d.Name
		switch {
		case d.Version == "":
		case strings.ContainsAny(d.Version[:1], "<>=!~"):
			spec += d.Version
		default:
			spec += "==" + d.Version
		}
		src := ""
		if set.Registry != "" {
			if u, err := url.Parse(set.Registry); err == nil && u.Scheme == "file" {
				src = " --no-index --find-links " + quote(u.Path)
			} else {
				src = " --index-url " + quote(set.Registry)
			}
		}
		reinstall := ""
		if action == edge.DepReinstall {
			reinstall = " --force-reinstall"
		}
		return proxyEnv + "set -e\n" + venv + pip + " install" + reinstall + src + " " + quote(spec) + "\n", nil
	case edge.DependencyLinux:
		if pm == nil {
			return "", errs.E(errs.Unavailable, "kind", "this host has no package manager ql3 knows (apk, opkg, apt-get): linux packages cannot be installed here")
		}
		spec := d.Name
		if d.Version != "" && !remove {
			if pm.VerSep == "" {
				return "", errs.Invalidf("version", "%s installs no chosen version: leave the version empty", pm.Name)
			}
			spec += pm.VerSep + d.Version
		}
		if remove {
			return proxyEnv + "set -e\n" + pm.Remove + " " + quote(d.Name) + "\n", nil
		}
		return proxyEnv + "set -e\n" + pm.Install + " " + quote(spec) + "\n", nil
	}
	return "", errs.Invalidf("kind", "unknown kind %q", d.Kind)
}
