package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCluster runs the scenarios that can share one cluster (two
// replicas, two workers), one after another: every scenario leaves the
// cluster as it found it (both workers online, no run in flight).
func TestCluster(t *testing.T) {
	c := newCluster(t)
	a := c.startControl()
	b := c.startControl()
	c.addWorker("w1", a)
	c.addWorker("w2", b)
	c.waitOnline("w1", "w2")

	t.Run("EverySecondTrigger", func(t *testing.T) { everySecond(t, c.with(t)) })
	t.Run("CancelFromCLI", func(t *testing.T) { cancelFromCLI(t, c.with(t)) })
	t.Run("ScriptTasksOnWorkers", func(t *testing.T) { scriptTasksOnWorkers(t, c.with(t)) })
	t.Run("ScriptTreeStartFigures", func(t *testing.T) { scriptTreeStartFigures(t, c.with(t)) })
	t.Run("ScriptDownloadKilled", func(t *testing.T) { scriptDownloadKilled(t, c.with(t)) })
	t.Run("WorkerKilledRetryOnLost", func(t *testing.T) { workerKilled(t, c.with(t), true) })
	t.Run("WorkerKilledNoRetry", func(t *testing.T) { workerKilled(t, c.with(t), false) })
	t.Run("CredentialRotationMidRun", func(t *testing.T) { credentialRotation(t, c.with(t)) })
	t.Run("WorkerSIGTERMDrains", func(t *testing.T) { workerDrains(t, c.with(t)) })
	t.Run("PullAnswerDropped", func(t *testing.T) { pullAnswerDropped(t, c.with(t)) })
	t.Run("PartitionedWorkerFencesItself", func(t *testing.T) { partitionedWorker(t, c.with(t)) })
	t.Run("ControlPlaneKilled", func(t *testing.T) { controlPlaneKilled(t, c.with(t)) })
	t.Run("CAOverlapRotation", func(t *testing.T) { caRotation(t, c.with(t)) }) // last: ends with B's CA
}

// waitOnline waits until each named worker has an online session.
func (c *cluster) waitOnline(names ...string) {
	c.t.Helper()
	for _, n := range names {
		c.eventually(30*time.Second, n+" online", func() bool {
			return c.scalar(`SELECT count(*) FROM ql3.worker_sessions s JOIN ql3.workers w USING (worker_id)
				WHERE w.name = $1 AND s.status = 'online'`, n) == 1
		})
	}
}

// noDuplicates asserts at most one Run per (trigger, occurrence) and at
// most one started attempt per Run and attempt number.
func (c *cluster) noDuplicates(t *testing.T) {
	t.Helper()
	if n := c.scalar(`SELECT count(*) FROM (SELECT trigger_id, scheduled_for_ms FROM ql3.runs
		WHERE trigger_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d occurrences have more than one Run", n)
	}
	if n := c.scalar(`SELECT count(*) FROM ql3.runs r WHERE (SELECT count(*) FROM ql3.attempts a
		WHERE a.run_id = r.run_id AND a.status IN ('starting', 'running')) > 1`); n != 0 {
		t.Errorf("%d Runs have more than one attempt in flight", n)
	}
}

func everySecond(t *testing.T, c *cluster) {
	const n = 6
	task := c.createTask("tick", `{"kind":"qinglong/command@v1","shell":{"command":"echo tick"},"concurrency":"allow"}`)
	var trig struct{ ID string }
	c.mustJSON(&trig, "trigger", "create", "--task", task, "--name", "every-second", "--expression", "* * * * * *")
	c.eventually(60*time.Second, fmt.Sprintf("%d succeeded runs", n), func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID) >= n
	})
	c.mustCLI("trigger", "update", "--task", task, "--id", trig.ID, "--expected-revision", "1",
		"--expression", "* * * * * *", "--disabled")
	c.eventually(30*time.Second, "every run of the trigger finished", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1
			AND status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')`, trig.ID) == 0
	})
	runs := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	span := c.scalar(`SELECT (max(scheduled_for_ms) - min(scheduled_for_ms)) / 1000 + 1 FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	ok := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID)
	logged := c.scalar(`SELECT count(*) FROM ql3.runs r WHERE r.trigger_id = $1 AND EXISTS (SELECT 1 FROM ql3.run_log_chunks l
		WHERE l.run_id = r.run_id AND l.stream = 'stdout' AND convert_from(l.data, 'UTF8') = E'tick\n')`, trig.ID)
	t.Logf("every-second trigger: %d occurrences from first to last, %d runs, %d succeeded, %d with their log", span, runs, ok, logged)
	if runs != span || ok != runs || logged != runs || runs < n {
		t.Errorf("every-second trigger: %d occurrences, %d runs, %d succeeded, %d logged; want all equal and ≥ %d", span, runs, ok, logged, n)
	}
	c.noDuplicates(t)
	// Both workers took part (offers go to whichever pulls).
	if w := c.scalar(`SELECT count(DISTINCT a.worker_id) FROM ql3.attempts a JOIN ql3.runs r USING (run_id) WHERE r.trigger_id = $1`, trig.ID); w != 2 {
		t.Logf("note: runs of the every-second trigger ran on %d worker(s)", w)
	}
}

// startRun publishes spec as task name and starts it manually; it returns
// the run id and its worker's name once the attempt is running and
// started(), when given, holds.
func (c *cluster) startRun(t *testing.T, name, spec string, started func() bool) (run, worker string) {
	t.Helper()
	run = c.runNow(c.createTask(name, spec))
	c.eventually(30*time.Second, "the run's attempt running", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND status = 'running'`, run) == 1 &&
			(started == nil || started())
	})
	worker = c.text(`SELECT w.name FROM ql3.attempts a JOIN ql3.workers w USING (worker_id) WHERE a.run_id = $1 AND a.status = 'running'`, run)
	return run, worker
}

// startLongRun publishes a task running `sleep <marker>` and starts it
// manually; it returns the run id once the attempt is running, the
// worker's name and the marker.
func (c *cluster) startLongRun(t *testing.T, name, retry string) (run, worker, marker string) {
	t.Helper()
	marker = fmt.Sprintf("%d.%03d", 300+time.Now().UnixNano()%300, time.Now().UnixNano()/1e6%1000)
	// Only the first attempt sleeps (the executor sets QL3_ATTEMPT), so a
	// retry finishes at once and the marker names attempt 1's processes.
	spec := fmt.Sprintf(`{"kind":"qinglong/command@v1","shell":{"command":"if [ \"$QL3_ATTEMPT\" = 1 ]; then sleep %s; fi; echo done"},"concurrency":"allow"%s}`, marker, retry)
	run, worker = c.startRun(t, name, spec, func() bool { return len(processesMatching("sleep "+marker)) > 0 })
	return run, worker, marker
}

func cancelFromCLI(t *testing.T, c *cluster) {
	run, _, marker := c.startLongRun(t, "cancel-me", "")
	t0 := time.Now()
	c.mustCLI("run", "cancel", "--id", run)
	limit := time.Duration(heartbeatMs+cancelGraceMs)*time.Millisecond + 3*time.Second // + one pull/heartbeat round trip
	c.eventually(limit, "the cancelled run's process group gone", func() bool { return len(processesMatching("sleep "+marker)) == 0 })
	t.Logf("cancel → process group gone in %v (heartbeat %d ms + grace %d ms)", time.Since(t0).Round(time.Millisecond), heartbeatMs, cancelGraceMs)
	c.eventually(30*time.Second, "run cancelled", func() bool { return c.runStatus(run) == "cancelled" })
}

func workerKilled(t *testing.T, c *cluster, retryOnLost bool) {
	retry := `,"retry":{"maxAttempts":1}`
	if retryOnLost {
		retry = `,"retry":{"maxAttempts":2,"backoffBaseMs":1000,"backoffMaxMs":1000,"retryOnLost":true}`
	}
	run, name, marker := c.startLongRun(t, fmt.Sprintf("killed-%v", retryOnLost), retry)
	c.mu.Lock()
	w := c.workers[name]
	c.mu.Unlock()
	w.stop(t, syscall.SIGKILL, 10*time.Second)
	if len(processesMatching("sleep "+marker)) == 0 {
		t.Logf("note: the task died with its worker")
	}
	c.startWorkerProc(w) // same state dir: the journal's recovery ends the orphaned group
	c.eventually(60*time.Second, "attempt 1 lost", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND attempt = 1 AND status = 'lost'`, run) == 1
	})
	c.eventually(30*time.Second, "the killed worker's task group gone after its restart", func() bool {
		return len(processesMatching("sleep "+marker)) == 0
	})
	if retryOnLost {
		c.eventually(90*time.Second, "the retry succeeded", func() bool { return c.runStatus(run) == "succeeded" })
		other := c.text(`SELECT w.name FROM ql3.attempts a JOIN ql3.workers w USING (worker_id) WHERE a.run_id = $1 AND a.attempt = 2`, run)
		t.Logf("attempt 1 on %s lost; attempt 2 on %s succeeded", name, other)
	} else {
		c.eventually(30*time.Second, "run failed", func() bool { return c.runStatus(run) == "failed" })
		if n := c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1`, run); n != 1 {
			t.Errorf("no retry expected, %d attempts", n)
		}
	}
	c.waitOnline(name)
	c.noDuplicates(t)
}

func workerDrains(t *testing.T, c *cluster) {
	run, name := c.startRun(t, "drain-me", `{"kind":"qinglong/command@v1","shell":{"command":"sleep 4; echo drained"},"concurrency":"allow"}`, nil)
	c.mu.Lock()
	w := c.workers[name]
	c.mu.Unlock()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not exit within 40 s of SIGTERM", name)
	}
	if w.err != nil {
		t.Errorf("%s exit after SIGTERM: %v, want 0", name, w.err)
	}
	if s := c.runStatus(run); s != "succeeded" {
		t.Errorf("run %s after the drain, want succeeded", s)
	}
	if n := c.scalar(`SELECT count(*) FROM ql3.worker_sessions s JOIN ql3.workers w USING (worker_id)
		WHERE w.name = $1 AND s.status <> 'offline'`, name); n != 0 {
		t.Errorf("%s has %d sessions not offline after draining", name, n)
	}
	if !strings.Contains(tailFile(w.log, 1<<20), "drain") {
		t.Logf("note: %s log does not mention draining", name)
	}
	c.startWorkerProc(w)
	c.waitOnline(name)
}

func controlPlaneKilled(t *testing.T, c *cluster) {
	task := c.createTask("tick-failover", `{"kind":"qinglong/command@v1","shell":{"command":"echo tock"},"concurrency":"allow"}`)
	var trig struct{ ID string }
	c.mustJSON(&trig, "trigger", "create", "--task", task, "--name", "failover-every-second", "--expression", "* * * * * *")
	c.eventually(30*time.Second, "3 succeeded runs", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded'`, trig.ID) >= 3
	})
	c.mu.Lock()
	victim := c.controls[0]
	c.mu.Unlock()
	killedAt := c.scalar(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
	victim.stop(t, syscall.SIGKILL, 10*time.Second)
	c.eventually(60*time.Second, "5 runs after the kill succeeded", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1 AND status = 'succeeded' AND scheduled_for_ms > $2`, trig.ID, killedAt) >= 5
	})
	c.mustCLI("trigger", "update", "--task", task, "--id", trig.ID, "--expected-revision", "1",
		"--expression", "* * * * * *", "--disabled")
	c.eventually(30*time.Second, "every run finished", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1
			AND status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')`, trig.ID) == 0
	})
	// The largest gap between consecutive occurrences' creation around the
	// kill: at most one scheduler claim lease (plus the round cadence).
	gap := c.scalar(`SELECT coalesce(max(created_at_ms - prev), 0) FROM (SELECT created_at_ms,
		lag(created_at_ms) OVER (ORDER BY scheduled_for_ms) AS prev FROM ql3.runs WHERE trigger_id = $1) g`, trig.ID)
	span := c.scalar(`SELECT (max(scheduled_for_ms) - min(scheduled_for_ms)) / 1000 + 1 FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	runs := c.scalar(`SELECT count(*) FROM ql3.runs WHERE trigger_id = $1`, trig.ID)
	t.Logf("replica SIGKILLed: %d occurrences, %d runs, largest gap between run creations %d ms (claim lease %d ms)", span, runs, gap, schedulerLeaseMs)
	if runs != span {
		t.Errorf("%d occurrences but %d runs", span, runs)
	}
	if gap > schedulerLeaseMs+1000+1000 {
		t.Errorf("largest gap %d ms, want ≤ claim lease %d ms + 2 s", gap, schedulerLeaseMs)
	}
	c.noDuplicates(t)
}

// credentialRotation rotates a worker's credential A → B while it runs a
// task: the worker picks B up from its credential file in the same session
// and generation, the reconciler revokes A after a session presented B
// (reason superseded), and the task completes.
func credentialRotation(t *testing.T, c *cluster) {
	run, name := c.startRun(t, "rotate-me", `{"kind":"qinglong/command@v1","shell":{"command":"sleep 12; echo rotated"},"concurrency":"allow"}`, nil)
	session := c.text(`SELECT session_id::text || '/' || session_generation FROM ql3.attempts WHERE run_id = $1`, run)
	credA := c.text(`SELECT c.credential_id::text FROM ql3.worker_credentials c JOIN ql3.workers w USING (worker_id)
		WHERE w.name = $1 AND c.status = 'active'`, name)
	c.mustCLI("worker", "rotate-credentials", "--id", name, "--credential-file",
		filepath.Join(c.pki, "workers", name, "credential"))
	c.eventually(40*time.Second, "credential A revoked as superseded", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.worker_credentials WHERE credential_id = $1
			AND status = 'revoked' AND revoke_reason = 'superseded'`, credA) == 1
	})
	c.eventually(40*time.Second, "the run succeeded", func() bool { return c.runStatus(run) == "succeeded" })
	live := c.text(`SELECT s.session_id::text || '/' || s.generation FROM ql3.worker_sessions s JOIN ql3.workers w USING (worker_id)
		WHERE w.name = $1 AND s.status = 'online'`, name)
	if live != session {
		t.Errorf("session/generation %s after the rotation, want the one the attempt ran in: %s", live, session)
	}
	if n := c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1`, run); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// partitionedWorker cuts w1 off from the authority (its replica is
// SIGSTOPped) while it runs attempt 1 of a retryOnLost task: the worker
// must stop the process group itself before its lease lapses (ADR 0019),
// so when the sweeper calls attempt 1 lost and attempt 2 starts on w2, no
// process of attempt 1 is left: never two attempts of one Run at once.
func partitionedWorker(t *testing.T, c *cluster) {
	c.mu.Lock()
	w1, w2, cp := c.workers["w1"], c.workers["w2"], c.controls[0]
	c.mu.Unlock()
	// Only w1 pulls while the run is offered.
	w2.stop(t, syscall.SIGTERM, 40*time.Second) // bounded: a hung drain fails, it does not hang the suite
	retry := `,"retry":{"maxAttempts":2,"backoffBaseMs":1000,"backoffMaxMs":1000,"retryOnLost":true}`
	run, name, marker := c.startLongRun(t, "fence-me", retry)
	if name != "w1" {
		t.Fatalf("attempt 1 ran on %s, want w1", name)
	}
	c.startWorkerProc(w2)
	c.waitOnline("w2")
	// Attempt 1's processes, by pid: attempt 2 runs the same command line,
	// so once it spawns on w2 the marker alone no longer tells them apart
	// (its process can exist a moment before its start is recorded).
	attempt1 := processesMatching("sleep " + marker)
	if len(attempt1) == 0 {
		t.Fatalf("attempt 1's process is not running")
	}
	if err := cp.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = cp.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	var fencedAt time.Time
	deadline := time.Now().Add(120 * time.Second)
	for {
		alive := false
		for _, pid := range attempt1 {
			if processAlive(pid, "sleep "+marker) {
				alive = true
			}
		}
		if !alive && fencedAt.IsZero() {
			fencedAt = time.Now()
			t.Logf("w1 stopped attempt 1's group on its own while cut off")
		}
		if c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND attempt = 2 AND started_at_ms IS NOT NULL`, run) > 0 {
			if alive {
				t.Fatalf("attempt 2 started while attempt 1's process group still runs on the cut-off worker: two attempts at once")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt 2 never started within 120 s (attempt 1 %s)", c.text(`SELECT status FROM ql3.attempts WHERE run_id = $1 AND attempt = 1`, run))
		}
		time.Sleep(100 * time.Millisecond)
	}
	resume()
	c.eventually(30*time.Second, "the retry succeeded", func() bool { return c.runStatus(run) == "succeeded" })
	if s := c.text(`SELECT status FROM ql3.attempts WHERE run_id = $1 AND attempt = 1`, run); s != "lost" {
		t.Errorf("attempt 1 %s, want lost", s)
	}
	c.waitOnline("w1")
	_ = w1
	c.noDuplicates(t)
}
