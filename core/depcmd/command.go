package depcmd

import (
	"net/url"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Places are where packages go.
type Places struct {
	ScriptsRoot string // node: <root>/node_modules, <root>/package.json
	PythonVenv  string // python: the virtual environment
	// Var, when set, names an environment variable the paths are relative
	// to: the line reads "$Var"/path (a worker's per-project deps
	// directory, known only where the line runs).
	Var string
}

func (p Places) word(path string) string {
	if p.Var == "" {
		return Quote(path)
	}
	return `"$` + p.Var + `"/` + Quote(path)
}

// The cluster's deps directory on a worker (ADR 0062): a worker sets
// DepsDirVar to <state>/deps/<project> for every process of the project;
// node packages go into its NodeDir (node_modules, package.json), python
// packages into the virtual environment PythonDir.
const (
	DepsDirVar = "QL3_DEPS_DIR"
	NodeDir    = "node"
	PythonDir  = "python"
)

// WorkerPlaces are the cluster's places, under $QL3_DEPS_DIR.
var WorkerPlaces = Places{ScriptsRoot: NodeDir, PythonVenv: PythonDir, Var: DepsDirVar}

// noManager is the refusal when a host has none of Managers.
const noManager = "this host has no package manager ql3 knows (apk, opkg, apt-get): linux packages cannot be installed here"

// Command is the shell line of an action. d is checked again (Check) and
// every name, version and URL is quoted all the same. pm is the host's
// package manager for linux packages; nil refuses them (Unavailable).
func Command(d Dependency, action string, set Settings, at Places, pm *PackageManager) (string, error) {
	return command(d, action, set, at, pm, false)
}

// WorkerCommand is the cluster's line of an action, run on a worker under
// $QL3_DEPS_DIR; a linux package's manager is chosen where the line runs
// (the first of Managers the worker has), and the line fails naming the
// three when there is none.
func WorkerCommand(d Dependency, action string, set Settings) (string, error) {
	return command(d, action, set, WorkerPlaces, nil, true)
}

func command(d Dependency, action string, set Settings, at Places, pm *PackageManager, choose bool) (string, error) {
	d, err := Check(d)
	if err != nil {
		return "", err
	}
	if err := CheckAction(action); err != nil {
		return "", err
	}
	var proxyEnv string
	if set.Proxy != "" {
		proxyEnv = "export HTTP_PROXY=" + Quote(set.Proxy) + " HTTPS_PROXY=" + Quote(set.Proxy) +
			" http_proxy=" + Quote(set.Proxy) + " https_proxy=" + Quote(set.Proxy) + "\n"
	}
	remove := action == Remove
	switch d.Kind {
	case Node:
		spec := d.Name
		if d.Version != "" {
			spec += "@" + d.Version
		}
		reg := ""
		if set.Registry != "" {
			reg = " --registry " + Quote(set.Registry)
		}
		root := at.word(at.ScriptsRoot)
		base := "npm --prefix " + root + " --no-audit --no-fund --loglevel=http" + reg
		if remove {
			return proxyEnv + "set -e\n" + base + " uninstall --save " + Quote(d.Name) + "\n", nil
		}
		return proxyEnv + "set -e\nmkdir -p " + root + "\n" + base + " install --save " + Quote(spec) + "\n", nil
	case Python:
		venvDir := at.word(at.PythonVenv)
		py := at.word(at.PythonVenv + "/bin/python3")
		// The venv sees the system's packages, and its pip is the
		// system's when there is one (no download, no ensurepip); else
		// ensurepip puts one in.
		venv := "[ -x " + py + " ] || python3 -m venv --system-site-packages --without-pip " + venvDir + "\n" +
			py + " -m pip --version >/dev/null 2>&1 || " + py + " -m ensurepip --default-pip\n"
		pip := py + " -m pip --disable-pip-version-check --no-input"
		if remove {
			return proxyEnv + "set -e\n" + venv + pip + " uninstall -y " + Quote(d.Name) + "\n", nil
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
				src = " --no-index --find-links " + Quote(u.Path)
			} else {
				src = " --index-url " + Quote(set.Registry)
			}
		}
		reinstall := ""
		if action == Reinstall {
			reinstall = " --force-reinstall"
		}
		return proxyEnv + "set -e\n" + venv + pip + " install" + reinstall + src + " " + Quote(spec) + "\n", nil
	case Linux:
		if choose {
			return proxyEnv + linuxChooser(d, remove), nil
		}
		if pm == nil {
			return "", errs.E(errs.Unavailable, "kind", noManager)
		}
		line, err := linuxLine(*pm, d, remove)
		if err != nil {
			return "", err
		}
		return proxyEnv + "set -e\n" + line + "\n", nil
	}
	return "", errs.Invalidf("kind", "unknown kind %q", d.Kind)
}

func linuxLine(pm PackageManager, d Dependency, remove bool) (string, error) {
	if remove {
		return pm.Remove + " " + Quote(d.Name), nil
	}
	spec := d.Name
	if d.Version != "" {
		if pm.VerSep == "" {
			return "", errs.Invalidf("version", "%s installs no chosen version: leave the version empty", pm.Name)
		}
		spec += pm.VerSep + d.Version
	}
	return pm.Install + " " + Quote(spec), nil
}

// linuxChooser picks the manager where the line runs: the first of
// Managers found, each branch the line Command would build for it.
func linuxChooser(d Dependency, remove bool) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for i, pm := range Managers {
		if i == 0 {
			b.WriteString("if")
		} else {
			b.WriteString("elif")
		}
		b.WriteString(" command -v " + pm.Name + " >/dev/null 2>&1; then\n  ")
		line, err := linuxLine(pm, d, remove)
		if err != nil {
			line = "echo " + Quote(err.Error()) + " >&2; exit 2"
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("else\n  echo " + Quote(noManager) + " >&2; exit 127\nfi\n")
	return b.String()
}
