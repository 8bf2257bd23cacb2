package main

import (
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

// TestServersDoNotImportThePanel: the admin API and the worker ingress
// build on the HTTP kit (module httpkit, ADR 0036); the web panel is a
// front end the app mounts, so neither server package links it, and the
// binary does (through the app).
func TestServersDoNotImportThePanel(t *testing.T) {
	target := deptest.ServerTargets[0]
	for _, pkg := range []string{"github.com/ql3/ql3/controlplane/adminapi", "github.com/ql3/ql3/controlplane/ingress"} {
		linksKit := false
		for _, d := range deptest.Deps(t, "../..", pkg, target) {
			linksKit = linksKit || d == "github.com/ql3/ql3/httpkit"
			if d == "github.com/ql3/ql3/panel" {
				t.Errorf("%s links the panel: only the app that serves it may", pkg)
			}
		}
		if !linksKit {
			t.Errorf("%s does not link httpkit; the check would be vacuous (or it grew its own HTTP helpers)", pkg)
		}
	}
	appLinksPanel := false
	for _, d := range deptest.Deps(t, "../..", "github.com/ql3/ql3/controlplane/cmd/ql3-control", target) {
		appLinksPanel = appLinksPanel || d == "github.com/ql3/ql3/panel"
	}
	if !appLinksPanel {
		t.Error("ql3-control does not link the panel: it no longer serves it")
	}
}
