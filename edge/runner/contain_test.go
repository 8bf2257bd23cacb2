//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/worker/executor"
)

// needContainment skips only when the kernel offers no cgroup at all.
func needContainment(t *testing.T, e *env) {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mi), " - cgroup") {
		t.Skip("the kernel offers neither cgroup v1 nor cgroup v2 here (none mounted)")
	}
	if c := e.exec.Containment(); strings.HasPrefix(c, "none") {
		t.Fatalf("a cgroup is mounted but containment is off: %s", c)
	}
}

// TestMemoryLimitRecordsOOM: a task over its spec's memory limit ends
// failed with reason oom (not retried as if it were lost).
func TestMemoryLimitRecordsOOM(t *testing.T) {
	e := newEnv(t)
	needContainment(t, e)
	task := e.task("hog", shellTask(`x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived`, func(c *spec.Command) {
		c.Limits = &spec.Limits{MemoryBytes: 32 << 20}
	}))
	r := e.runNow(task.ID)
	e.start()
	got := e.waitRun(r.ID, "failed", status(run.RunFailed))
	if got.Reason != executor.ReasonOOM || got.ErrorClass != run.ErrorProcessExit {
		t.Fatalf("run = %s reason %q class %q", got.Status, got.Reason, got.ErrorClass)
	}
	if log := e.readLog(r.ID, 1); !strings.Contains(log, "[ql3: out of memory") || strings.Contains(log, "survived") {
		t.Fatalf("log %q", log)
	}
}

// TestEnvIEscapeeDiesWithTheRun: the report's `setsid env -i sleep &`
// does not outlive a run that exits (the case the subreaper path cannot
// attribute, ADR 0017).
func TestEnvIEscapeeDiesWithTheRun(t *testing.T) {
	e := newEnv(t)
	needContainment(t, e)
	release := filepath.Join(t.TempDir(), "release")
	task := e.task("escapee", shellTask(`setsid env -i /bin/sleep 1000 >/dev/null 2>&1 & echo "escapee=$!"; while [ ! -e `+release+` ]; do sleep 0.01; done`, nil))
	r := e.runNow(task.ID)
	e.start()
	m := regexp.MustCompile(`escapee=(\d+)\n`).FindStringSubmatch(e.waitLog(r.ID, 1, "\n"))
	pid, _ := strconv.Atoi(m[1])
	id, err := executor.ReadIdentity(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	if id.Alive() {
		t.Fatalf("the setsid env -i child %d outlived its run", pid)
	}
}
