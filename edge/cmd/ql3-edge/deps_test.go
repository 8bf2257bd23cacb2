package main

import (
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

// TestEdgeLinksNoPostgres: the edge binary must not link PostgreSQL code
// (DESIGN.md §1) for any platform it ships for.
func TestEdgeLinksNoPostgres(t *testing.T) {
	deptest.Forbid(t, "../..", "github.com/ql3/ql3/edge/cmd/ql3-edge", deptest.ServerTargets,
		[]string{"github.com/jackc/", "github.com/ql3/ql3/controlplane"})
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
