// Package deps installs the packages scripts need (ADR 0055): node
// packages into the scripts folder's node_modules (npm), python packages
// into a virtual environment whose bin folder leads the PATH of every
// process the edge starts, linux packages through the host's package
// manager. Every install, reinstall and removal is a Run of the
// dependency's system task: a shell line built by core/depcmd (the rules
// the cluster shares) from validated names, with its log, history and
// cancel.
package deps

import (
	"os/exec"

	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/edge"
)

// Places are where packages go.
type Places = depcmd.Places

// PackageManager is a host's linux package manager.
type PackageManager = depcmd.PackageManager

var managers = depcmd.Managers

// FindPackageManager returns the first of apk, opkg and apt-get the host
// has (lookPath is exec.LookPath in production).
func FindPackageManager(lookPath func(string) (string, error)) (PackageManager, bool) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	return depcmd.FindPackageManager(lookPath)
}

// quote is a POSIX shell single-quoted word.
func quote(s string) string { return depcmd.Quote(s) }

// Command is the shell line of an action (core/depcmd.Command).
func Command(d edge.Dependency, action string, set edge.DependencySettings, at Places, pm *PackageManager) (string, error) {
	return depcmd.Command(depcmd.Dependency{Kind: d.Kind, Name: d.Name, Version: d.Version}, action, depcmd.Settings(set), at, pm)
}
