//go:build linux

package integration

import (
	"net/http"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/worker/clock"
)

// TestRetentionPrunesOldRuns: finished runs older than the retention
// (default 7 days) are removed with their history by the hourly sweep,
// newer ones stay, so an every-second task cannot grow the database
// without bound.
func TestRetentionPrunesOldRuns(t *testing.T) {
	clk := clock.NewFake(t0)
	s := startServer(t, t.TempDir(), clk)
	task := s.createTask("manual", quickSpec)

	var old httpapi.Run
	s.api("POST", "/api/v1/tasks/"+task.ID+"/runs", httpapi.RunNowRequest{IdempotencyKey: "old"}, http.StatusCreated, &old)
	s.waitRun(old.ID, "to succeed", status("succeeded"))

	s.clock.Advance(6 * 24 * time.Hour)
	var recent httpapi.Run
	s.api("POST", "/api/v1/tasks/"+task.ID+"/runs", httpapi.RunNowRequest{IdempotencyKey: "recent"}, http.StatusCreated, &recent)
	s.waitRun(recent.ID, "to succeed", status("succeeded"))

	// Two days later the first run is 8 days old, the second 2 days.
	s.clock.Advance(2 * 24 * time.Hour)
	eventually(t, "the old run to be pruned", func() bool {
		code, _ := s.raw("GET", "/api/v1/runs/"+old.ID, nil)
		return code == http.StatusNotFound
	})
	if got := s.run(recent.ID); got.Status != "succeeded" {
		t.Fatalf("the recent run was touched: %+v", got)
	}
	if n := len(s.runs(task.ID)); n != 1 {
		t.Fatalf("%d runs left, want 1", n)
	}
}
