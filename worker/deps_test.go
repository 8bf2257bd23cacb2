// The worker is a small static binary for routers (DESIGN.md §4): it links
// no database code and none of the scheduling libraries, on every target.
package worker_test

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

var workerBanned = []string{
	"database/sql", "github.com/jackc/", "modernc.org/",
	"github.com/robfig/cron/v3", "github.com/Masterminds/semver/v3",
	"github.com/ql3/ql3/edge", "github.com/ql3/ql3/controlplane",
	// Size and attack surface on routers (ADR 0020): no template engines,
	// no debug endpoints, no placement matcher (it links semver).
	"text/template", "html/template", "net/http/pprof", "expvar",
	"github.com/ql3/ql3/core/placement/matcher", "github.com/ql3/ql3/core/cron", "github.com/ql3/ql3/core/schedule",
}

func TestWorkerBinaryDeps(t *testing.T) {
	deptest.Forbid(t, ".", "./cmd/ql3-worker", deptest.WorkerTargets, workerBanned)
}

// The binary links no library outside the standard library and ql3's own
// core and worker packages: no reflection-heavy third-party codecs,
// loggers or frameworks sneak in with a convenience import.
func TestWorkerBinaryLinksNoThirdParty(t *testing.T) {
	for _, target := range deptest.WorkerTargets {
		deps := deptest.NonStandard(t, ".", "./cmd/ql3-worker", target)
		if len(deps) == 0 {
			t.Fatalf("go list found nothing for ./cmd/ql3-worker on %v; the check would be vacuous", target)
		}
		for _, d := range deps {
			if !strings.HasPrefix(d, "github.com/ql3/ql3/core/") && !strings.HasPrefix(d, "github.com/ql3/ql3/worker/") {
				t.Errorf("ql3-worker for %v links %s", target, d)
			}
		}
	}
}

// executorMayLink is everything outside the standard library the shared
// executor may link: itself, worker/clock (stdlib-only) and the pure core
// packages of the attempt vocabulary (run's statuses and error classes,
// errs' field errors; run pulls in canonjson for its payload digests) and
// of the task spec it maps onto a process (spec, with the placement types
// it carries; not the placement matcher, which links semver). The edge imports this
// package (DESIGN.md §1's one sideways arrow), so whatever it links, both
// binaries link.
var executorMayLink = map[string]bool{
	"github.com/ql3/ql3/worker/executor": true,
	"github.com/ql3/ql3/worker/clock":    true,
	"github.com/ql3/ql3/core/errs":       true,
	"github.com/ql3/ql3/core/run":        true,
	"github.com/ql3/ql3/core/canonjson":  true,
	"github.com/ql3/ql3/core/spec":       true,
	"github.com/ql3/ql3/core/placement":  true,
	"github.com/ql3/ql3/core/scriptpath": true, // the script kind's path rule (pure, stdlib + errs/canonjson)
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
