//go:build linux

package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

// TestSecondBinaryOnSameDataDir is the `make run` twice reproduction: a
// second `ql3-edge serve` on a data dir in use, on the same port or another,
// exits at once with an error naming the first one's pid, and the first
// server's running attempt is untouched (no recovery ran, nothing was
// signalled).
func TestSecondBinaryOnSameDataDir(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := startBinary(t, data)
	c := p.client(t, data)
	c.createTask("sleeper", `{"kind":"qinglong/command@v1","argv":{"file":"sleep","args":["30"]}}`)
	var run httpapi.Run
	c.api("POST", "/api/v1/tasks/sleeper/runs", nil, 201, &run)
	pid := c.waitRun(run.ID, "to be running", attemptRunning).Attempts[0].PID
	want := fmt.Sprintf("in use by ql3-edge pid %d", p.cmd.Process.Pid)
	for _, listen := range []string{strings.TrimPrefix(p.base, "http://"), "127.0.0.1:0"} {
		// Bounded: on a build without the lock the second server would
		// serve beside the first until killed.
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		out, err := exec.CommandContext(ctx, edgeBinary(t), "serve", "--data-dir", data, "--listen", listen).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("second serve on %s: %v\n%s\nwant %q", listen, err, out, want)
		}
	}
	if r := c.run(run.ID); !attemptRunning(r) || processGone(pid) {
		t.Fatalf("the first server's run was disturbed: %+v (pid %d gone: %v)", r, pid, processGone(pid))
	}
	c.api("POST", "/api/v1/runs/"+run.ID+"/cancel", nil, 202, nil)
	c.waitRun(run.ID, "to be cancelled", status("cancelled"))
}
