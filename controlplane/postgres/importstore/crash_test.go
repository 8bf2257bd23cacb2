package importstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/importer"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/envseal"
)

// The crash helper: the test binary re-run with these variables applies a
// plan against the test's database and kills itself with SIGKILL at a
// named point inside the apply's transaction.
const (
	envCrashAt      = "QL3_TEST_CPIMPORT_CRASH_AT"
	envCrashDSN     = "QL3_TEST_CPIMPORT_DSN"
	envCrashKEK     = "QL3_TEST_CPIMPORT_KEK"
	envCrashProject = "QL3_TEST_CPIMPORT_PROJECT"
	envCrashFrom    = "QL3_TEST_CPIMPORT_FROM"
	envCrashPlan    = "QL3_TEST_CPIMPORT_PLAN"
)

func crashHelper(point string) int {
	ctx := context.Background()
	kek, err := envseal.ParseKEK(os.Getenv(envCrashKEK))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pool, err := pgxpool.New(ctx, os.Getenv(envCrashDSN))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	t := &testing.T{}
	c := openCluster(t, pool, kek)
	c.store.Hook = func(p string) {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal arrives
		}
	}
	_, err = c.im.Apply(ctx, os.Getenv(envCrashProject), os.Getenv(envCrashFrom), zone, os.Getenv(envCrashPlan))
	fmt.Fprintf(os.Stderr, "apply returned without reaching %s: %v\n", point, err)
	return 3
}

// TestKillDuringApply kills an apply with SIGKILL inside its transaction —
// at its start, with the files written, with the tasks, with the env
// entries, with the ledger row — and checks that nothing of it is visible,
// then that a re-run applies everything exactly once.
func TestKillDuringApply(t *testing.T) {
	ctx := context.Background()
	for _, point := range []string{"begun", "files", "tasks", "envs", "ledger"} {
		t.Run(point, func(t *testing.T) {
			from := copyTree(t, fixture)
			c := newCluster(t)
			p, _, err := importer.Inspect(ctx, from, zone)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envCrashAt+"="+point, envCrashDSN+"="+c.db.Cluster.DSN(c.db.Name, postgres.RoleAdmin),
				envCrashKEK+"="+c.kek.Text(), envCrashProject+"="+c.project, envCrashFrom+"="+from, envCrashPlan+"="+p.Digest)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper did not die by SIGKILL at %s: %v\n%s", point, err, out)
			}
			// The server rolls the dead session's transaction back; the
			// re-run's first statement on the project's row waits for it.
			c.assertCounts(t, 0, 0, 0, 0, 0)
			res, err := c.im.Apply(ctx, c.project, from, zone, p.Digest)
			if err != nil || res.Status != controlplane.ImportApplied {
				t.Fatalf("re-run: %+v %v", res, err)
			}
			triggers := c.count(t, `SELECT count(*) FROM ql3.triggers WHERE project_id = $1`)
			c.assertCounts(t, fixtureTasks+fixtureSubs, triggers, fixtureEnvs, fixtureFiles, 1)
			if triggers < fixtureTasks {
				t.Fatalf("%d triggers for %d tasks", triggers, fixtureTasks)
			}
			again, err := c.im.Apply(ctx, c.project, from, zone, p.Digest)
			if err != nil || again.Status != controlplane.ImportExisting {
				t.Fatalf("replay: %+v %v", again, err)
			}
			c.assertCounts(t, fixtureTasks+fixtureSubs, triggers, fixtureEnvs, fixtureFiles, 1)
		})
	}
}
