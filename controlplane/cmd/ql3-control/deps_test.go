package main

import (
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

// TestControlLinksNoEdgeOrWorker: dependencies point one way (DESIGN.md §1);
// the control plane never links the edge profile or the worker. The SQLite
// driver is linked for one thing only: the QingLong import reads a QingLong
// database through the shared reader (qlsource, ADR 0063), from package
// importer; no other package of the control plane reaches it.
func TestControlLinksNoEdgeOrWorker(t *testing.T) {
	deptest.Forbid(t, "../..", "github.com/ql3/ql3/controlplane/cmd/ql3-control", deptest.ServerTargets,
		[]string{"github.com/ql3/ql3/edge", "github.com/ql3/ql3/worker"})
	const cp = "github.com/ql3/ql3/controlplane"
	host := deptest.ServerTargets[:1]
	for _, pkg := range []string{cp, cp + "/adminapi", cp + "/accessapi", cp + "/importapi", cp + "/cli", cp + "/coordinator", cp + "/ingress",
		cp + "/postgres", cp + "/postgres/importstore", cp + "/postgres/publication", cp + "/postgres/envstore", cp + "/postgres/scriptstore"} {
		deptest.Forbid(t, "../..", pkg, host, []string{"modernc.org/sqlite"})
	}
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

// TestControlPlaneRoomsPointOneWay: the control plane's domain package
// (records, the admission decision, the ports) links no adapter and no
// driver; coordinator, adminapi and ingress depend on it and core, never
// on postgres (or any of its subpackages) or pgx; the CLI's client side
// (cli) talks HTTP and links neither either; postgres and its
// subpackages implement the ports and never import the ingress, the admin API
// or the coordinator; the shared test fixtures are linked by tests only
// (ADR 0034).
func TestControlPlaneRoomsPointOneWay(t *testing.T) {
	const cp = "github.com/ql3/ql3/controlplane"
	host := deptest.ServerTargets[:1]
	deptest.Forbid(t, "../..", cp, host, []string{cp + "/", "github.com/jackc/", "net/http"})
	for _, pkg := range []string{cp + "/coordinator", cp + "/adminapi", cp + "/accessapi", cp + "/depapi", cp + "/ingress", cp + "/cli",
		cp + "/importapi", cp + "/importer"} {
		deptest.Forbid(t, "../..", pkg, host, []string{cp + "/postgres", cp + "/postgres/", "github.com/jackc/"})
	}
	for _, pkg := range []string{cp + "/postgres", cp + "/postgres/publication", cp + "/postgres/dispatch",
		cp + "/postgres/session", cp + "/postgres/schedule", cp + "/postgres/sweep", cp + "/postgres/runops", cp + "/postgres/envstore"} {
		deptest.Forbid(t, "../..", pkg, host, []string{cp + "/ingress", cp + "/adminapi", cp + "/coordinator",
			cp + "/app", cp + "/cli", cp + "/postgres/internal/"})
	}
	// The foundation links none of the packages built on it.
	deptest.Forbid(t, "../..", cp+"/postgres", host, []string{cp + "/postgres/"})
	deptest.Forbid(t, "../..", "github.com/ql3/ql3/controlplane/cmd/ql3-control", host, []string{cp + "/postgres/internal/"})
}
