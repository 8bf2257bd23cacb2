package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scriptTasksOnWorkers (ADR 0052): scripts written through the CLI into
// project e2e's folder run as script tasks on a remote worker with the
// edge's output (edge/integration TestScriptsThroughBinary: the same
// files, the same expected lines): a .js and a .py script each load a
// sibling module and print an env value (the spec's environment here, the
// env store there). An edit while a Run is in flight publishes a new tree
// digest; the in-flight Run finishes with the tree it started from, the
// next Run runs the new one.
func scriptTasksOnWorkers(t *testing.T, c *cluster) {
	if c.scalar(`SELECT count(*) FROM ql3.projects WHERE name = 'e2e'`) == 0 {
		c.mustCLI("project", "create", "--name", "e2e")
	}
	files := map[string]string{
		"dir/main.js":   "const u = require('./util');\nconsole.log(u.greet(process.env.GREETING), process.argv.slice(2).join(','), process.env.QL3_SCRIPT);\n",
		"dir/util.js":   "exports.greet = (s) => 'js:' + s.toUpperCase();\n",
		"dir/main.py":   "import os, sys\nimport util\nprint(util.greet(os.environ['GREETING']), ','.join(sys.argv[1:]), os.environ['QL3_SCRIPT'])\n",
		"dir/util.py":   "def greet(s):\n    return 'py:' + s.upper()\n",
		"slow/main.sh":  "while [ ! -e \"$GATE\" ]; do sleep 0.05; done\n. ./value.sh\necho \"value $V\"\n",
		"slow/value.sh": "V=old\n",
	}
	for name, content := range files {
		c.putScript(name, content, "")
	}
	env := `"environment":{"GREETING":"hello-store"}`
	js := c.createTask("script-js", `{"kind":"qinglong/command@v1","script":{"file":"dir/main.js","args":["a","b"]},"concurrency":"allow",`+env+`}`)
	py := c.createTask("script-py", `{"kind":"qinglong/command@v1","script":{"file":"dir/main.py","args":["a","b"]},"concurrency":"allow",`+env+`}`)
	for task, want := range map[string]string{js: "js:HELLO-STORE a,b dir/main.js\n", py: "py:HELLO-STORE a,b dir/main.py\n"} {
		run := c.runNow(task)
		c.waitFinished(run)
		if st, log := c.runStatus(run), c.stdout(run); st != "succeeded" || log != want {
			t.Errorf("run %s: %s, stdout %q; want %q", run, st, log, want)
		}
	}

	// A QingLong shell task `task dir/main.js a b` runs the same script with
	// its args, as on the edge: its tree pinned at publish, its spec kept as
	// written.
	shell := c.createTask("script-shell-task", `{"kind":"qinglong/command@v1","shell":{"command":"task dir/main.js a b"},"concurrency":"allow",`+env+`}`)
	if got := c.text(`SELECT coalesce(e.canonical_spec::jsonb->'shell'->>'command', '') || ' ' || coalesce(e.script_dir, '') || ' ' || (e.script_tree IS NOT NULL)::text
		FROM ql3.execution_revisions e JOIN ql3.tasks t ON e.task_id = t.task_id AND e.task_revision = t.head_revision WHERE t.task_id = $1`, shell); got != "task dir/main.js a b dir true" {
		t.Errorf("shell task line: execution revision %q, want the spec as written with dir's tree pinned", got)
	}
	sr := c.runNow(shell)
	c.waitFinished(sr)
	if st, log := c.runStatus(sr), c.stdout(sr); st != "succeeded" || log != "js:HELLO-STORE a,b dir/main.js\n" {
		t.Errorf("shell task line run %s: %s, stdout %q", sr, st, log)
	}

	c.logWorkerRSS(t, "after script runs")

	// In flight: the Run waits on a gate file while the script is edited.
	gate := filepath.Join(c.dir, fmt.Sprintf("gate-%d", time.Now().UnixNano()))
	slow := c.createTask("script-slow", `{"kind":"qinglong/command@v1","script":{"file":"slow/main.sh"},"concurrency":"allow","environment":{"GATE":"`+gate+`"}}`)
	first := c.text(`SELECT encode(script_tree, 'hex') FROM ql3.execution_revisions e JOIN ql3.tasks t
		ON e.task_id = t.task_id AND e.task_revision = t.head_revision WHERE t.task_id = $1`, slow)
	run := c.runNow(slow)
	c.eventually(30*time.Second, "the slow run running", func() bool {
		return c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND status = 'running'`, run) == 1
	})
	etag := strings.TrimSpace(c.text(`SELECT encode(sha256, 'hex') FROM ql3.script_entries e JOIN ql3.projects p USING (project_id)
		WHERE p.name = 'e2e' AND e.path = 'slow/value.sh'`))
	c.putScript("slow/value.sh", "V=new\n", etag)
	second := c.text(`SELECT encode(script_tree, 'hex') FROM ql3.execution_revisions e JOIN ql3.tasks t
		ON e.task_id = t.task_id AND e.task_revision = t.head_revision WHERE t.task_id = $1`, slow)
	if second == first {
		t.Errorf("the edit left the task on tree %s", first)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.waitFinished(run)
	if log := c.stdout(run); log != "value old\n" {
		t.Errorf("the in-flight run printed %q, want the tree it started from (value old)", log)
	}
	next := c.runNow(slow)
	c.waitFinished(next)
	if log := c.stdout(next); log != "value new\n" {
		t.Errorf("the next run printed %q, want value new", log)
	}
	// A missing interpreter is a start failure that names it.
	c.putScript("dir/x.ts", "console.log(1)\n", "")
	ts := c.createTask("script-ts", `{"kind":"qinglong/command@v1","script":{"file":"dir/x.ts"},"concurrency":"allow"}`)
	tr := c.runNow(ts)
	c.waitFinished(tr)
	if st, log := c.runStatus(tr), c.stdout(tr); st != "failed" || !strings.Contains(log, "tsx or ts-node") {
		t.Errorf("no interpreter for .ts: %s, log %q", st, log)
	}
}

// putScript writes a script of project e2e through the CLI (a new one, or
// over ifMatch).
func (c *cluster) putScript(name, content, ifMatch string) {
	c.t.Helper()
	local := filepath.Join(c.dir, "script-"+strings.ReplaceAll(name, "/", "_"))
	if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	args := []string{"script", "put", "--project", "e2e", "--path", name, "--file", local}
	if ifMatch != "" {
		args = append(args, "--if-match", ifMatch)
	}
	c.mustCLI(args...)
}

func (c *cluster) waitFinished(run string) {
	c.t.Helper()
	c.eventually(60*time.Second, "run "+run+" finished", func() bool {
		switch c.runStatus(run) {
		case "succeeded", "failed", "cancelled", "timed_out":
			return true
		}
		return false
	})
}

// stdout is a run's stored stdout (every attempt, in order).
func (c *cluster) stdout(run string) string {
	c.t.Helper()
	return c.text(`SELECT coalesce(string_agg(convert_from(data, 'UTF8'), '' ORDER BY attempt, offset_bytes), '')
		FROM ql3.run_log_chunks WHERE run_id = $1 AND stream = 'stdout'`, run)
}

// scriptTreeStartFigures measures (logs, never asserts a duration) the
// start latency of a script task whose folder holds 1 MiB (16 files of
// 64 KiB): lease → running for the first Run on a worker (the tree is
// fetched over the ingress and verified) and for later Runs there (the
// cached tree is re-hashed); and the control plane's storage per blob. It
// asserts what the figures rest on: later Runs on a worker fetched nothing.
func scriptTreeStartFigures(t *testing.T, c *cluster) {
	for i := range 16 {
		line := fmt.Sprintf("// %02d padding to 64 KiB\n", i)
		c.putScript(fmt.Sprintf("mib/part%02d.js", i), strings.Repeat(line, 65536/len(line)+1)[:65536], "")
	}
	c.putScript("mib/main.js", "require('./part00.js'); console.log('ok')\n", "")
	reusedBefore := c.reusedTrees()
	task := c.createTask("script-mib", `{"kind":"qinglong/command@v1","script":{"file":"mib/main.js"},"concurrency":"allow"}`)
	seen := map[string]bool{}
	var first, cached []int64
	for range 6 {
		run := c.runNow(task)
		c.waitFinished(run)
		if st := c.runStatus(run); st != "succeeded" {
			t.Fatalf("run %s: %s (%q)", run, st, c.stdout(run))
		}
		worker := c.text(`SELECT w.name FROM ql3.attempts a JOIN ql3.workers w USING (worker_id) WHERE a.run_id = $1`, run)
		ms := c.scalar(`SELECT a.started_at_ms - l.leased_at_ms FROM ql3.attempts a JOIN ql3.run_leases l ON l.attempt_id = a.attempt_id
			WHERE a.run_id = $1`, run)
		if seen[worker] {
			cached = append(cached, ms)
		} else {
			first = append(first, ms)
			seen[worker] = true
		}
	}
	reused := c.reusedTrees() - reusedBefore
	if len(cached) > 0 && reused < len(cached) {
		t.Errorf("%d later Runs on a worker, %d reused the cached tree", len(cached), reused)
	}
	var blobs, content, total int64
	blobs = c.scalar(`SELECT count(*) FROM ql3.script_blobs`)
	content = c.scalar(`SELECT coalesce(sum(size), 0) FROM ql3.script_blobs`)
	total = c.scalar(`SELECT pg_total_relation_size('ql3.script_blobs')`)
	t.Logf("1 MiB script tree, lease → running: first Run on a worker %v ms, cached %v ms; script_blobs: %d blobs, %d content bytes, %d bytes on disk (%d per blob beyond its content)",
		first, cached, blobs, content, total, (total-content)/max(blobs, 1))
}

// reusedTrees counts the workers' "script tree ready" lines of a cached
// tree so far.
func (c *cluster) reusedTrees() int {
	n := 0
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.workers {
		data, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "script tree ready") && (strings.Contains(line, "reused=true") || strings.Contains(line, `"reused":true`)) {
				n++
			}
		}
	}
	return n
}

// scriptDownloadKilled: a worker killed while it downloads a script tree
// never runs anything of it; after its restart the Run is offered again and
// the transfer resumes from the bytes already on disk; the script sees
// exactly the pinned content. The worker reaches its ingress through a
// proxy that stalls the blob transfer half-way until the kill, so the kill
// lands mid-transfer however fast the machine (a plain race between the
// test's poll and a 64 MiB loopback transfer once let the tree complete
// and the script start before the kill). w1 and w2 are stopped meanwhile.
func scriptDownloadKilled(t *testing.T, c *cluster) {
	c.mu.Lock()
	w1, w2, cp := c.workers["w1"], c.workers["w2"], c.controls[0]
	c.mu.Unlock()
	if c.scalar(`SELECT count(*) FROM ql3.projects WHERE name = 'e2e'`) == 0 {
		c.mustCLI("project", "create", "--name", "e2e")
	}
	proxy := startStallProxy(t, cp.ingress, 6<<20)
	ws := c.addWorker("w-stall", &control{admin: cp.admin, ingress: proxy.addr()})
	c.waitOnline("w-stall")
	for _, w := range []*worker{w1, w2} {
		w.stop(t, syscall.SIGTERM, 40*time.Second)
	}
	var all []byte
	for i := range 4 {
		part := bytes.Repeat([]byte{byte('a' + i)}, 16<<20)
		all = append(all, part...)
		local := filepath.Join(c.dir, fmt.Sprintf("big-%d.bin", i))
		if err := os.WriteFile(local, part, 0o600); err != nil {
			t.Fatal(err)
		}
		c.mustCLI("script", "put", "--project", "e2e", "--path", fmt.Sprintf("big/part%d.bin", i), "--file", local)
	}
	c.putScript("big/main.sh", "cat part0.bin part1.bin part2.bin part3.bin | sha256sum | cut -c1-16\n", "")
	sum := sha256.Sum256(all)
	want := hex.EncodeToString(sum[:])[:16] + "\n"
	task := c.createTask("script-big", `{"kind":"qinglong/command@v1","script":{"file":"big/main.sh"},"concurrency":"allow","timeoutMs":120000}`)
	proxy.armed.Store(true)
	run := c.runNow(task)
	select {
	case <-proxy.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the proxy never saw a blob-sized transfer to stall")
	}
	blobs := filepath.Join(ws.stateDir, "scripts", "blobs")
	c.eventually(30*time.Second, "a partial blob on w-stall", func() bool {
		parts, _ := filepath.Glob(filepath.Join(blobs, "*.part"))
		for _, p := range parts {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
				return true
			}
		}
		return false
	})
	ws.stop(t, syscall.SIGKILL, 10*time.Second)
	close(proxy.resume)
	if n := c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND started_at_ms IS NOT NULL`, run); n != 0 {
		t.Errorf("an attempt started before the tree was complete")
	}
	c.startWorkerProc(ws)
	c.waitFinished(run)
	if st, log := c.runStatus(run), c.stdout(run); st != "succeeded" || log != want {
		t.Errorf("after the restart: %s, stdout %q; want %q", st, log, want)
	}
	data, _ := os.ReadFile(filepath.Join(c.dir, "w-stall.log"))
	resumed := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "script tree ready") && strings.Contains(line, "reused=false") && !strings.Contains(line, "resumed_at=0") {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("w-stall's log shows no resumed transfer")
	}
	ws.stop(t, syscall.SIGTERM, 40*time.Second)
	for _, w := range []*worker{w1, w2} {
		c.startWorkerProc(w)
	}
	c.waitOnline("w1", "w2")
	c.noDuplicates(t)
}

// logWorkerRSS logs (never asserts) each live worker's resident set
// (VmRSS), node profile, once it is idle again (issue #22's goal: 10 MiB).
func (c *cluster) logWorkerRSS(t *testing.T, when string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, w := range c.workers {
		if w.proc == nil || !w.alive() {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "VmRSS:") || strings.HasPrefix(line, "VmHWM:") {
				t.Logf("worker %s %s (node profile, idle): %s", name, when, strings.Join(strings.Fields(line), " "))
			}
		}
	}
}
