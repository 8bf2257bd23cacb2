package main

import (
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

// TestControlLinksNoEdgeOrWorker: dependencies point one way (DESIGN.md §1);
// the control plane never links the edge profile, its SQLite driver or the
// worker.
func TestControlLinksNoEdgeOrWorker(t *testing.T) {
	deptest.Forbid(t, "../..", "github.com/ql3/ql3/controlplane/cmd/ql3-control", deptest.ServerTargets,
		[]string{"github.com/ql3/ql3/edge", "github.com/ql3/ql3/worker", "modernc.org/sqlite"})
}

// TestControlLinksTimeZoneData: replicas must agree on every trigger zone.
func TestControlLinksTimeZoneData(t *testing.T) {
	for _, target := range deptest.ServerTargets {
		found := false
		for _, d := range deptest.Deps(t, "../..", "github.com/ql3/ql3/controlplane/cmd/ql3-control", target) {
			if d == "time/tzdata" {
				found = true
			}
		}
		if !found {
			t.Errorf("ql3-control for %v does not link time/tzdata", target)
		}
	}
}
