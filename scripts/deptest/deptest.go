// Package deptest lists what a package links and fails a test on banned
// imports. Each binary's module has a test that calls it for every target
// GOOS/GOARCH, so the layout rules in DESIGN.md §1 are checked, not hoped for.
package deptest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Target is one GOOS/GOARCH (and GOARM/GOMIPS) combination.
type Target struct {
	GOOS, GOARCH, GOARM, GOMIPS string
}

func (t Target) String() string {
	s := t.GOOS + "/" + t.GOARCH
	if t.GOARM != "" {
		s += "/v" + t.GOARM
	}
	if t.GOMIPS != "" {
		s += "/" + t.GOMIPS
	}
	return s
}

// WorkerTargets are the platforms the worker ships for (DESIGN.md §4).
var WorkerTargets = []Target{
	{GOOS: "linux", GOARCH: "amd64"},
	{GOOS: "linux", GOARCH: "arm64"},
	{GOOS: "linux", GOARCH: "arm", GOARM: "7"},
	{GOOS: "linux", GOARCH: "arm", GOARM: "5"},
	{GOOS: "linux", GOARCH: "mipsle", GOMIPS: "softfloat"},
	{GOOS: "linux", GOARCH: "mips", GOMIPS: "softfloat"},
}

// ServerTargets are the platforms edge and control plane binaries ship for.
var ServerTargets = []Target{
	{GOOS: "linux", GOARCH: "amd64"},
	{GOOS: "linux", GOARCH: "arm64"},
}

// Deps returns the import paths pkg links (transitively, tests excluded) when
// built for target, as `go list -deps` reports them. dir is the module dir.
func Deps(t testing.TB, dir, pkg string, target Target) []string {
	t.Helper()
	return goList(t, dir, target, "-deps", "-f", "{{.ImportPath}}", pkg)
}

// NonStandard returns the import paths outside the standard library that
// pkg links when built for target (pkg itself included).
func NonStandard(t testing.TB, dir, pkg string, target Target) []string {
	t.Helper()
	return goList(t, dir, target, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg)
}

// Imports returns, for every package matching pattern, its direct imports.
func Imports(t testing.TB, dir, pattern string) map[string][]string {
	t.Helper()
	lines := goList(t, dir, Target{}, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pattern)
	out := make(map[string][]string, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		out[f[0]] = f[1:]
	}
	return out
}

func goList(t testing.TB, dir string, target Target, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if target.GOOS != "" {
		cmd.Env = append(cmd.Env, "GOOS="+target.GOOS, "GOARCH="+target.GOARCH)
	}
	if target.GOARM != "" {
		cmd.Env = append(cmd.Env, "GOARM="+target.GOARM)
	}
	if target.GOMIPS != "" {
		cmd.Env = append(cmd.Env, "GOMIPS="+target.GOMIPS)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v for %v: %v\n%s", args, target, err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// Violations returns the entries of deps that equal a banned path or sit
// below one ("github.com/jackc/" bans every jackc module; "net" bans only net).
func Violations(deps, banned []string) []string {
	var bad []string
	for _, d := range deps {
		for _, b := range banned {
			if d == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(d, b)) {
				bad = append(bad, d)
				break
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// Forbid fails t if pkg, built for each target, links anything banned.
func Forbid(t *testing.T, dir, pkg string, targets []Target, banned []string) {
	t.Helper()
	for _, target := range targets {
		if bad := Violations(Deps(t, dir, pkg, target), banned); len(bad) > 0 {
			t.Errorf("%s for %v links banned packages: %v", pkg, target, bad)
		}
	}
}
