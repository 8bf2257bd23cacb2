package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestStandbyPromotion moves the cluster to a promoted standby while its
// workers keep running: the replicas lose the primary (SIGKILL, as when
// their database vanishes), the standby replays everything, the primary
// is killed, the standby promoted, and the replicas start again against it
// on the same addresses. Scheduling and dispatch continue on the new
// primary; every Run ends by policy; no occurrence has two Runs.
func TestStandbyPromotion(t *testing.T) {
	f := newFailover(t, false)
	f.everySecond("tick", "echo tick")
	f.waitSucceeded(3, 60*time.Second, "3 succeeded runs on the primary")
	for _, cp := range []*control{f.a, f.b} {
		cp.stop(t, syscall.SIGKILL, 10*time.Second)
	}
	if err := f.primary.WaitReplayed(f.ctx, f.standby); err != nil {
		t.Fatal(err)
	}
	f.crashAndPromote(false)
	f.finish()
	c, trig := f.c, f.trigger
	runs := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, trig)
	ok := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig)
	span := c.scalar(`SELECT (max(scheduled_for_ms) - min(scheduled_for_ms)) / 1000 + 1 FROM ql3.runs WHERE trigger_id = $1`, trig)
	t.Logf("promotion: %d occurrences from first to last, %d Runs, %d succeeded, the rest ended by policy (misfire skip covers the switchover)", span, runs, ok)
}

// TestUnplannedFailoverWithSynchronousStandby crashes the primary while
// both replicas and both workers are busy (no replay wait, nothing
// stopped first), promotes the synchronous standby and points the replicas
// at it. With synchronous replication every commit a replica or worker was
// told about is on the standby, so the promoted database knows every
// execution that happened: every process the workers started (marked by
// the process itself, outside the database) has its Run there, so no
// occurrence can be admitted and run a second time, and no occurrence has
// two Runs. With asynchronous replication the commits of the last few
// milliseconds can be lost and a Run executed again (ADR 0033).
func TestUnplannedFailoverWithSynchronousStandby(t *testing.T) {
	f := newFailover(t, true)
	marks := filepath.Join(f.c.dir, "executions")
	f.everySecond("mark", `echo \"$QL3_RUN_ID\" >> `+marks+`; sleep 1`)
	f.waitSucceeded(3, 60*time.Second, "3 succeeded runs on the primary")
	f.c.eventually(30*time.Second, "a run in flight", func() bool {
		return f.c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'running'`, f.trigger) >= 1
	})
	f.crashAndPromote(true) // mid-flight: replicas admitting, workers running
	f.finish()

	c := f.c
	raw, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range strings.Fields(string(raw)) {
		seen[id]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("Run %s executed %d times", id, n)
		}
		if c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND run_id = $2::uuid`, f.trigger, id) != 1 {
			t.Errorf("Run %s was executed but the promoted database does not know it: its occurrence can run again", id)
		}
	}
	if len(seen) < 8 {
		t.Errorf("%d executions marked; want at least the 3 + 5 succeeded runs", len(seen))
	}
	runs := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, f.trigger)
	other := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status <> 'succeeded'`, f.trigger)
	t.Logf("unplanned failover: %d executions, %d Runs (%d ended other than succeeded, by policy), 0 duplicates", len(seen), runs, other)
}

// failover is a cluster (2 replicas, 2 workers) on a primary with a
// streaming standby, driving one every-second trigger across a promotion.
type failover struct {
	t                *testing.T
	ctx              context.Context
	primary, standby *pgtest.Cluster
	db               *pgtest.DB
	c                *cluster
	a, b             *control
	task, trigger    string
}

func newFailover(t *testing.T, synchronous bool) *failover {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	f := &failover{t: t, ctx: ctx, primary: pgtest.NewCluster(t)}
	f.db = f.primary.NewDB(t)
	f.standby = f.primary.StartStandby(t)
	if synchronous {
		if err := f.primary.RequireSynchronousStandby(ctx, f.db.Name); err != nil {
			t.Fatal(err)
		}
	}
	f.c = newClusterOn(t, f.db)
	f.a, f.b = f.c.startControl(), f.c.startControl()
	f.c.addWorker("w1", f.a)
	f.c.addWorker("w2", f.b)
	f.c.waitOnline("w1", "w2")
	return f
}

// everySecond creates the task (concurrency allow) and its trigger.
func (f *failover) everySecond(name, command string) {
	f.task = f.c.createTask(name, `{"kind":"qinglong/command@v1","shell":{"command":"`+command+`"},"concurrency":"allow"}`)
	var trig struct{ ID string }
	f.c.mustJSON(&trig, "trigger", "create", "--task", f.task, "--name", "every-second", "--expression", "* * * * * *")
	f.trigger = trig.ID
}

func (f *failover) waitSucceeded(n int64, limit time.Duration, what string) {
	f.t.Helper()
	f.c.eventually(limit, what, func() bool {
		return f.c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, f.trigger) >= n
	})
}

// crashAndPromote SIGKILLs the primary, promotes the standby and starts
// the replicas again on their addresses against it (stopping them first
// when they still run: the database address moved).
func (f *failover) crashAndPromote(replicasAlive bool) {
	f.t.Helper()
	if err := f.primary.Kill(); err != nil {
		f.t.Fatal(err)
	}
	if err := f.standby.Promote(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	promoted := &pgtest.DB{Cluster: f.standby, Name: f.db.Name}
	f.c.dsn = promoted.DSN
	f.c.pool = promoted.Pool(f.t, "")
	for _, cp := range []*control{f.a, f.b} {
		if replicasAlive {
			cp.stop(f.t, syscall.SIGKILL, 10*time.Second)
		}
		f.c.restartControl(cp)
	}
	f.c.waitOnline("w1", "w2")
}

// finish waits for 5 more successes on the promoted server, disables the
// trigger, waits until every Run ended and checks for duplicates.
func (f *failover) finish() {
	f.t.Helper()
	c := f.c
	before := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, f.trigger)
	f.waitSucceeded(before+5, 90*time.Second, "5 more succeeded runs on the promoted standby")
	c.mustCLI("trigger", "update", "--task", f.task, "--id", f.trigger, "--expected-revision", "1", "--expression", "* * * * * *", "--disabled")
	c.eventually(90*time.Second, "every run ended", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1
			AND status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')`, f.trigger) == 0
	})
	c.noDuplicates(f.t)
}
