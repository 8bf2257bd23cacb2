//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/importer"
	"github.com/ql3/ql3/qlsource"
)

// TestImportThroughBinary: the real ql3-edge binary imports the committed
// QingLong 2.21.0 fixture through the CLI (inspect, apply, apply again),
// then runs an imported script task: the Python script, copied with its
// sibling module, prints the length of JD_COOKIE, which must be the
// length of the value QingLong exported (five rows, one disabled, one
// pinned, joined with & in QingLong's order).
func TestImportThroughBinary(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	from := filepath.Join(dir, "ql")
	copyFixture(t, "../../scripts/qlfixture/testdata/qinglong-2.21.0", from)
	p := startBinary(t, data)
	c := p.client(t, data)
	c.dataDir = data

	code, out, errOut := c.ql3(nil, "import", "inspect", "--from", from, "--zone", "Asia/Shanghai")
	if code != 0 || !strings.Contains(out, "requires_manual_action") || !strings.Contains(out, "plan: sha256:") {
		t.Fatalf("inspect: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := c.ql3(nil, "import", "inspect", "--from", from); code != 2 || !strings.Contains(errOut, "--zone is required") {
		t.Fatalf("inspect without --zone: %d %q", code, errOut)
	}
	var in importer.Inspection
	code, out, _ = c.ql3(nil, "import", "inspect", "--from", from, "--zone", "Asia/Shanghai", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || strings.Contains(out, "AAA111") {
		t.Fatalf("inspect --json: %d %q", code, out)
	}
	code, out, errOut = c.ql3(nil, "import", "apply", "--from", from, "--plan", in.Digest)
	if code != 0 || !strings.HasPrefix(out, "applied: 11 tasks, 9 env entries, 1 subscriptions, 4 dependencies, 7 script files") {
		t.Fatalf("apply: %d %q %q", code, out, errOut)
	}
	code, out, _ = c.ql3(nil, "import", "apply", "--from", from, "--plan", in.Digest)
	if code != 0 || !strings.HasPrefix(out, "existing: 11 tasks") {
		t.Fatalf("apply again: %d %q", code, out)
	}

	// The imported subscription got its pull task (a system task of the
	// subscriptions service), scheduled in the legacy zone.
	var pull httpapi.Task
	c.api("GET", "/api/v1/tasks/subscription%20faker2", nil, 200, &pull)
	if len(pull.Triggers) != 1 || pull.Triggers[0].Expression != "0 */6 * * *" || pull.Triggers[0].TimeZone != "Asia/Shanghai" {
		t.Errorf("the subscription's pull task: %+v", pull.Triggers)
	}

	src, err := qlsource.Read(t.Context(), from)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("hello %d\n", len(qlimport.JoinedValues(src.Envs)["JD_COOKIE"]))
	var r httpapi.Run
	c.api("POST", "/api/v1/tasks/multi%20schedule/runs", nil, 201, &r)
	done := c.waitRun(r.ID, "to finish", status("succeeded", "failed", "timed_out", "cancelled"))
	_, log := c.raw("GET", "/api/v1/runs/"+r.ID+"/attempts/1/log", nil)
	if done.Status != "succeeded" || string(log) != want {
		t.Fatalf("imported script task: %s, log %q; want %q", done.Status, log, want)
	}
}

func copyFixture(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
