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

// executorMayLink is everything outside the standard library the shared
// executor may link: itself, worker/clock (stdlib-only) and the pure core
// packages of the attempt vocabulary (run's statuses and error classes,
// errs' field errors; run pulls in canonjson for its payload digests). The edge imports this
// package (DESIGN.md §1's one sideways arrow), so whatever it links, both
// binaries link.
var executorMayLink = map[string]bool{
	"github.com/ql3/ql3/worker/executor": true,
	"github.com/ql3/ql3/worker/clock":    true,
	"github.com/ql3/ql3/core/errs":       true,
	"github.com/ql3/ql3/core/run":        true,
	"github.com/ql3/ql3/core/canonjson":  true,
}

func TestExecutorLinksOnlyStdlibAndCoreVocabulary(t *testing.T) {
	targets := append(append([]deptest.Target(nil), deptest.WorkerTargets...), deptest.ServerTargets...)
	for _, target := range targets {
		deps := deptest.NonStandard(t, ".", "./executor", target)
		if len(deps) == 0 {
			t.Fatalf("go list found nothing for ./executor on %v; the check would be vacuous", target)
		}
		for _, d := range deps {
			if !executorMayLink[d] {
				t.Errorf("worker/executor for %v links %s: it may link only the standard library and %v", target, d, executorMayLink)
			}
		}
	}
}
