package agent_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/ql3/ql3/worker/executor"
)

// A real process floods 100 MB: the worker uploads the head while it runs
// and, at the end, the marker and the tail, so the stored log has the first
// and the last bytes and says how much was dropped; the spool directory
// holds no tail ring afterwards.
func TestFloodUploadsHeadMarkerAndTail(t *testing.T) {
	h := newHarness(t, newExecRunner(t))
	const capBytes = 1 << 20
	h.cfg.LogBytes = capBytes
	script := `echo FIRST; head -c 100000000 /dev/zero | tr '\0' m; echo; echo LAST`
	h.srv.AddRun(execRunID, script, 600_000)
	h.start(nil)
	if !h.driveUntil(time.Second, func() bool { return h.srvRun(execRunID).Completion != nil }) {
		t.Fatal("no completion")
	}
	got := h.srvRun(execRunID)
	head, tail := executor.HeadBytes(capBytes), executor.TailBytes(capBytes)
	const total = len("FIRST\n") + 100_000_000 + len("\nLAST\n")
	marker := executor.DroppedMarker(int64(total)-head-tail, head, tail)
	if !bytes.HasPrefix(got.Log, []byte("FIRST\nmmm")) || !bytes.HasSuffix(got.Log, []byte("mmm\nLAST\n")) {
		t.Fatalf("log of %d bytes does not keep the first and the last bytes", len(got.Log))
	}
	if i := bytes.Index(got.Log, []byte(marker)); i != int(head) {
		t.Fatalf("marker at %d, want at %d (after the head)", i, head)
	}
	if int64(len(got.Log)) != head+int64(len(marker))+tail || !got.Completion.LogTruncated || got.Completion.StdoutBytes != int64(len(got.Log)) {
		t.Fatalf("log %d bytes, truncated %v, stdoutBytes %d", len(got.Log), got.Completion.LogTruncated, got.Completion.StdoutBytes)
	}
	rings, _ := filepath.Glob(filepath.Join(h.state, "spool", "*.tail"))
	if len(rings) != 0 {
		t.Fatalf("tail rings left behind: %v", rings)
	}
}
