package agent

import (
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/core/protocol"
)

// A project's processes get <DepsRoot>/<project id> (ADR 0062); without a
// root or a project (an older authority's offer) they get none.
func TestDepsDirIsThePerProjectFolder(t *testing.T) {
	root := t.TempDir()
	const project = "0190b6a4-2b8e-7c3d-9a1f-3e5d7c9b1a2f"
	for _, tc := range []struct {
		root, project, want string
	}{
		{root, project, filepath.Join(root, project)},
		{root, "", ""},
		{"", project, ""},
	} {
		a := &Agent{cfg: Config{DepsRoot: tc.root}}
		if got := a.depsDir(protocol.Offer{ProjectID: tc.project}); got != tc.want {
			t.Errorf("root %q project %q: %q, want %q", tc.root, tc.project, got, tc.want)
		}
	}
}
