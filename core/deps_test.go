// Dependency rules for the pure domain (DESIGN.md §1): core does no I/O, and
// the packages the worker links stay free of cron and semver.
package core_test

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/scripts/deptest"
)

// bannedDirect may not be imported by any core package: no network, no
// processes, no databases, no file system.
var bannedDirect = []string{"net", "net/http", "os", "os/exec", "os/signal", "io/fs", "io/ioutil", "database/sql", "syscall", "plugin", "unsafe"}

// bannedLinked may not be linked by any core package, even indirectly.
// database/sql/driver is allowed: it holds only interfaces, and semver's
// Version implements driver.Valuer with it (no database code is linked).
var bannedLinked = []string{"net", "net/http", "os/exec", "database/sql", "github.com/jackc/", "modernc.org/"}

// workerLinked are the core packages the worker binary links; they must not
// pull in the scheduling libraries (DESIGN.md §1 "link granularity").
var workerLinked = []string{"errs", "canonjson", "spec", "placement", "fence", "lease", "protocol", "run", "env", "mask"}

var workerBanned = []string{"github.com/robfig/cron/v3", "github.com/Masterminds/semver/v3", "golang.org/x/text/", "golang.org/x/crypto/"}

func TestCoreImportsNoIO(t *testing.T) {
	imports := deptest.Imports(t, ".", "./...")
	if len(imports) < 2 {
		t.Fatalf("go list found only %d core packages; the check would be vacuous", len(imports))
	}
	for pkg, imps := range imports {
		if bad := deptest.Violations(imps, bannedDirect); len(bad) > 0 {
			t.Errorf("%s imports %v: core must stay free of I/O", pkg, bad)
		}
		for _, imp := range imps {
			if strings.Contains(imp, ".") && !allowedThirdParty(imp) {
				t.Errorf("%s imports %s: core may only use the standard library, robfig/cron, semver, x/text and x/crypto/argon2", pkg, imp)
			}
		}
	}
}

func allowedThirdParty(imp string) bool {
	return strings.HasPrefix(imp, "github.com/ql3/ql3/core/") ||
		imp == "github.com/robfig/cron/v3" || imp == "github.com/Masterminds/semver/v3" ||
		// names normalises user-visible names to NFC (one name, one form);
		// x/text's norm tables are the standard implementation of UAX #15.
		strings.HasPrefix(imp, "golang.org/x/text/") ||
		// password hashes with argon2id (RFC 9106), a pure function; x/crypto
		// holds the standard implementation (ADR 0049, 0060).
		strings.HasPrefix(imp, "golang.org/x/crypto/argon2") || strings.HasPrefix(imp, "golang.org/x/crypto/blake2b") ||
		strings.HasPrefix(imp, "golang.org/x/sys/cpu")
}

func TestCoreLinksNoNetworkOrDatabase(t *testing.T) {
	for pkg := range deptest.Imports(t, ".", "./...") {
		deptest.Forbid(t, ".", pkg, deptest.ServerTargets[:1], bannedLinked)
	}
}

func TestWorkerLinkedPackagesStaySmall(t *testing.T) {
	all := deptest.Imports(t, ".", "./...")
	for _, name := range workerLinked {
		pkg := "github.com/ql3/ql3/core/" + name
		if _, ok := all[pkg]; !ok {
			t.Errorf("%s is listed as worker-linked but does not exist", pkg)
			continue
		}
		deptest.Forbid(t, ".", pkg, deptest.WorkerTargets[4:5], workerBanned)
	}
}
