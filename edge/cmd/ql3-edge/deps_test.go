package main

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

// TestEdgeLinksNoPostgres: the edge binary must not link PostgreSQL code
// (DESIGN.md §1) for any platform it ships for.
func TestEdgeLinksNoPostgres(t *testing.T) {
	deptest.Forbid(t, "../..", "github.com/ql3/ql3/edge/cmd/ql3-edge", deptest.ServerTargets,
		[]string{"github.com/jackc/", "github.com/ql3/ql3/controlplane"})
}

// TestEdgeUsesOnlyTheWorkerExecutor: DESIGN.md §1 allows the edge one
// sideways arrow, to the worker module's process-execution packages: the
// executor and worker/clock, the time source whose types the executor's
// Clock names (the edge runs on that one clock rather than a copy). Every
// edge package (tests included) imports nothing else of the worker module,
// and the binary links nothing else of it.
func TestEdgeUsesOnlyTheWorkerExecutor(t *testing.T) {
	const allowed = "github.com/ql3/ql3/worker/executor"
	const clockPkg = "github.com/ql3/ql3/worker/clock"
	sideways := func(p string) bool {
		return (p == "github.com/ql3/ql3/worker" || strings.HasPrefix(p, "github.com/ql3/ql3/worker/")) && p != allowed && p != clockPkg
	}
	imports := deptest.Imports(t, "../..", "./...")
	usesExecutor := false
	for pkg, imps := range imports {
		for _, imp := range imps {
			usesExecutor = usesExecutor || imp == allowed
			if sideways(imp) {
				t.Errorf("%s imports %s: the edge may import only %s and %s from the worker module", pkg, imp, allowed, clockPkg)
			}
		}
	}
	if !usesExecutor {
		t.Errorf("no edge package imports %s; the check would be vacuous (or the edge grew its own executor)", allowed)
	}
	for _, target := range deptest.ServerTargets {
		for _, d := range deptest.Deps(t, "../..", "github.com/ql3/ql3/edge/cmd/ql3-edge", target) {
			if sideways(d) {
				t.Errorf("ql3-edge for %v links %s", target, d)
			}
		}
	}
}

// TestEdgeLinksTimeZoneData: triggers name IANA zones, and routers often
// have no zoneinfo on disk, so the binary embeds it.
func TestEdgeLinksTimeZoneData(t *testing.T) {
	for _, target := range deptest.ServerTargets {
		found := false
		for _, d := range deptest.Deps(t, "../..", "github.com/ql3/ql3/edge/cmd/ql3-edge", target) {
			if d == "time/tzdata" {
				found = true
			}
		}
		if !found {
			t.Errorf("ql3-edge for %v does not link time/tzdata", target)
		}
	}
}

// TestEdgeAPIDoesNotImportThePanel: the HTTP API builds on the HTTP kit
// (module httpkit, ADR 0036); the web panel is a front end the app mounts,
// so only the app imports it, and the API package links none of it.
func TestEdgeAPIDoesNotImportThePanel(t *testing.T) {
	deptest.Forbid(t, "../..", "github.com/ql3/ql3/edge/httpapi", deptest.ServerTargets[:1],
		[]string{"github.com/ql3/ql3/panel"})
	linksKit, appLinksPanel := false, false
	for _, d := range deptest.Deps(t, "../..", "github.com/ql3/ql3/edge/httpapi", deptest.ServerTargets[0]) {
		linksKit = linksKit || d == "github.com/ql3/ql3/httpkit"
	}
	for _, d := range deptest.Deps(t, "../..", "github.com/ql3/ql3/edge/cmd/ql3-edge", deptest.ServerTargets[0]) {
		appLinksPanel = appLinksPanel || d == "github.com/ql3/ql3/panel"
	}
	if !linksKit || !appLinksPanel {
		t.Errorf("edge/httpapi links httpkit: %v; ql3-edge links the panel: %v; both must hold or the check is vacuous", linksKit, appLinksPanel)
	}
}
