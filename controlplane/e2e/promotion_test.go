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
	primary := pgtest.NewCluster(t)
	db := primary.NewDB(t)
	standby := primary.StartStandby(t)
	c := newClusterOn(t, db)
	a := c.startControl()
	b := c.startControl()
	c.addWorker("w1", a)
	c.addWorker("w2", b)
	c.waitOnline("w1", "w2")
	task := c.createTask("tick", `{"kind":"qinglong/command@v1","shell":{"command":"echo tick"},"concurrency":"allow"}`)
	var trig struct{ ID string }
	c.mustJSON(&trig, "trigger", "create", "--task", task, "--name", "every-second", "--expression", "* * * * * *")
	c.eventually(60*time.Second, "3 succeeded runs on the primary", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID) >= 3
	})
	before := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, trig.ID)

	for _, cp := range []*control{a, b} {
		cp.stop(t, syscall.SIGKILL, 10*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := primary.WaitReplayed(ctx, standby); err != nil {
		t.Fatal(err)
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := &pgtest.DB{Cluster: standby, Name: db.Name}
	c.dsn = promoted.DSN
	c.pool = promoted.Pool(t, "")
	c.restartControl(a)
	c.restartControl(b)
	c.waitOnline("w1", "w2")
	c.eventually(90*time.Second, "5 more succeeded runs on the promoted standby", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID) >= before+5
	})
	c.mustCLI("trigger", "update", "--task", task, "--id", trig.ID, "--expected-revision", "1", "--expression", "* * * * * *", "--disabled")
	c.eventually(90*time.Second, "every run ended", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1
			AND status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')`, trig.ID) == 0
	})
	runs := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	ok := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID)
	span := c.scalar(`SELECT (max(scheduled_for_ms) - min(scheduled_for_ms)) / 1000 + 1 FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	t.Logf("promotion: %d occurrences from first to last, %d Runs, %d succeeded, the rest ended by policy (misfire skip covers the switchover)", span, runs, ok)
	c.noDuplicates(t)
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
// milliseconds can be lost and an occurrence admitted and run again
// (ADR 0033).
func TestUnplannedFailoverWithSynchronousStandby(t *testing.T) {
	primary := pgtest.NewCluster(t)
	db := primary.NewDB(t)
	standby := primary.StartStandby(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := primary.RequireSynchronousStandby(ctx, db.Name); err != nil {
		t.Fatal(err)
	}
	c := newClusterOn(t, db)
	a := c.startControl()
	b := c.startControl()
	c.addWorker("w1", a)
	c.addWorker("w2", b)
	c.waitOnline("w1", "w2")
	marks := filepath.Join(c.dir, "executions")
	task := c.createTask("mark", `{"kind":"qinglong/command@v1","shell":{"command":"echo \"$QL3_RUN_ID\" >> `+marks+`; sleep 1"},"concurrency":"allow"}`)
	var trig struct{ ID string }
	c.mustJSON(&trig, "trigger", "create", "--task", task, "--name", "every-second", "--expression", "* * * * * *")
	c.eventually(60*time.Second, "3 succeeded runs and one running on the primary", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID) >= 3 &&
			c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'running'`, trig.ID) >= 1
	})

	if err := primary.Kill(); err != nil { // mid-flight: replicas admitting, workers running
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := &pgtest.DB{Cluster: standby, Name: db.Name}
	c.dsn = promoted.DSN
	c.pool = promoted.Pool(t, "")
	before := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID)
	for _, cp := range []*control{a, b} { // the address moves: restart them on the promoted server
		cp.stop(t, syscall.SIGKILL, 10*time.Second)
		c.restartControl(cp)
	}
	c.waitOnline("w1", "w2")
	c.eventually(90*time.Second, "5 more succeeded runs on the promoted standby", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID) >= before+5
	})
	c.mustCLI("trigger", "update", "--task", task, "--id", trig.ID, "--expected-revision", "1", "--expression", "* * * * * *", "--disabled")
	c.eventually(90*time.Second, "every run ended", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1
			AND status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')`, trig.ID) == 0
	})
	c.noDuplicates(t)

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
		if c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND run_id = $2::uuid`, trig.ID, id) != 1 {
			t.Errorf("Run %s was executed but the promoted database does not know it: its occurrence can run again", id)
		}
	}
	if len(seen) < 8 {
		t.Errorf("%d executions marked; want at least the 3 + 5 succeeded runs", len(seen))
	}
	runs := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	lost := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status <> 'succeeded'`, trig.ID)
	t.Logf("unplanned failover: %d executions, %d Runs (%d ended other than succeeded, by policy), 0 duplicates", len(seen), runs, lost)
}
