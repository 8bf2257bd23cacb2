// The worker is a small static binary for routers (DESIGN.md §4): it links
// no database code and none of the scheduling libraries, on every target.
package worker_test

import (
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

var workerBanned = []string{
	"database/sql", "github.com/jackc/", "modernc.org/",
	"github.com/robfig/cron/v3", "github.com/Masterminds/semver/v3",
	"github.com/ql3/ql3/edge", "github.com/ql3/ql3/controlplane",
}

func TestWorkerBinaryDeps(t *testing.T) {
	deptest.Forbid(t, ".", "./cmd/ql3-worker", deptest.WorkerTargets, workerBanned)
}
