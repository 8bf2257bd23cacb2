package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/postgres"
)

// TestClusterEnv (issue 21, ADR 0051): a project's env store on a real
// cluster — values reach a remote worker's process in QingLong order,
// narrowed by env.use, pinned at the claim; the worker masks them in the
// stored log with a count; no value is in pg_dump, PostgreSQL's WAL, the
// worker's state directory after a crash, any log or any API answer but
// reveal; a wrong key file is a clear error naming it.
func TestClusterEnv(t *testing.T) {
	c := newCluster(t)
	key := filepath.Join(c.dir, "env.key")
	c.mustCLI("env", "key-init", "--out", key)
	cp := c.startControl("--secret-key-file", key)
	w := c.addWorker("w1", cp)
	c.waitOnline("w1")

	// Three distinct secrets (random per run, so no file of the repository
	// or the test's own command lines holds them).
	s1, s2, s3 := secret(t, "alpha"), secret(t, "bravo"), secret(t, "charlie")
	secrets := []string{s1, s2, s3}
	var answers bytes.Buffer // every API answer but reveal's
	cli := func(stdin string, args ...string) string {
		t.Helper()
		out := c.cliStdin(stdin, args...)
		answers.WriteString(out)
		return out
	}
	cli("", "project", "create", "--name", "e2e")
	var a1 struct{ ID string }
	addJSON(t, c, &a1, s1, "A", "first account")
	cli(s2+"\n", "env", "add", "--project", "e2e", "--name", "A", "--remarks", "second account")
	cli("disabled-value\n", "env", "add", "--project", "e2e", "--name", "A", "--disabled")
	cli(s3, "env", "add", "--project", "e2e", "--name", "B")
	cli("", "env", "list", "--project", "e2e")
	cli("", "env", "export", "--project", "e2e")
	cli("", "env", "list", "--project", "e2e", "--json")

	t.Run("QingLongOrderAndAllowlist", func(t *testing.T) {
		all := c.runTask(t, "env-all", `{"kind":"qinglong/command@v1","shell":{"command":"printf '%s' \"$A\" | sha256sum; printf '%s' \"$B\" | sha256sum"},"concurrency":"allow"}`)
		if want := sum(s1+"&"+s2) + "  -\n" + sum(s3) + "  -\n"; c.storedLog(all) != want {
			t.Errorf("A and B as the process saw them: %q, want %q", c.storedLog(all), want)
		}
		allow := c.runTask(t, "env-allow", `{"kind":"qinglong/command@v1","shell":{"command":"echo \"A=${A-unset}\"; printf '%s' \"$B\" | sha256sum"},"env":{"use":["B"]},"concurrency":"allow"}`)
		if want := "A=unset\n" + sum(s3) + "  -\n"; c.storedLog(allow) != want {
			t.Errorf("allowlist: %q, want %q", c.storedLog(allow), want)
		}
	})

	release := filepath.Join(c.dir, "release")
	waitSpec := fmt.Sprintf(`{"kind":"qinglong/command@v1","shell":{"command":"while [ ! -e %s ]; do sleep 0.05; done; printf '%%s' \"$A\" | sha256sum"},"concurrency":"allow","retry":{"maxAttempts":1}}`, release)
	pinnedTask := c.createTask("env-pinned", waitSpec)
	t.Run("EditDuringARunDoesNotReachIt", func(t *testing.T) {
		_ = os.Remove(release)
		run := c.runNow(pinnedTask)
		c.eventually(30*time.Second, "the attempt running", func() bool {
			return c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND status = 'running'`, run) == 1
		})
		cli("edited-"+s1, "env", "edit", "--project", "e2e", "--id", a1.ID, "--value-file", "-")
		touch(t, release)
		c.eventually(30*time.Second, "the run succeeded", func() bool { return c.runStatus(run) == "succeeded" })
		if got, want := c.storedLog(run), sum(s1+"&"+s2)+"  -\n"; got != want {
			t.Errorf("the run saw %q after an edit during it, want the value at its claim %q", got, want)
		}
		next := c.runNow(pinnedTask)
		c.eventually(30*time.Second, "the next run succeeded", func() bool { return c.runStatus(next) == "succeeded" })
		if got, want := c.storedLog(next), sum("edited-"+s1+"&"+s2)+"  -\n"; got != want {
			t.Errorf("the next run saw %q, want the edited value %q", got, want)
		}
		cli(s1, "env", "edit", "--project", "e2e", "--id", a1.ID, "--value-file", "-")
	})

	t.Run("PrintedSecretIsMaskedWithACount", func(t *testing.T) {
		// Whole, split across two writes, and in the middle of a 1 MiB line.
		run := c.runTask(t, "env-mask", `{"kind":"qinglong/command@v1","shell":{"command":"echo \"token: $B\"; printf '%s' \"$B\" | head -c 6; sleep 0.3; printf '%s\\n' \"$B\" | tail -c +7; head -c 524288 /dev/zero | tr '\\000' x; printf '%s' \"$B\"; head -c 524288 /dev/zero | tr '\\000' y; echo"},"concurrency":"allow"}`)
		log := c.storedLog(run)
		if strings.Contains(log, s3) || strings.Contains(log, s3[:len(s3)/2]+s3[len(s3)/2:]) {
			t.Fatal("the stored log holds the secret")
		}
		if n := strings.Count(log, "***"); n != 3 || !strings.HasPrefix(log, "token: ***\n***\n") {
			t.Errorf("stored log has %d *** (want 3), starts %q", n, log[:min(len(log), 40)])
		}
		if n := c.scalar(`SELECT coalesce(masked_count, -1) FROM ql3.attempts WHERE run_id = $1`, run); n != 3 {
			t.Errorf("attempt masked_count = %d, want 3", n)
		}
		answers.WriteString(cli("", "run", "logs", "--id", run))
	})

	t.Run("CrashAndRecover", func(t *testing.T) {
		_ = os.Remove(release)
		run := c.runNow(pinnedTask)
		c.eventually(30*time.Second, "the attempt running", func() bool {
			return c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1 AND status = 'running'`, run) == 1
		})
		w.stop(t, syscall.SIGKILL, 10*time.Second)
		c.startWorkerProc(w)
		c.eventually(60*time.Second, "the attempt lost", func() bool { return c.runStatus(run) == "failed" || c.runStatus(run) == "lost" })
		touch(t, release)
		c.waitOnline("w1")
		if hits := grepTree(t, w.stateDir, secrets); len(hits) > 0 {
			t.Errorf("the worker's state dir holds a value after a crash: %v", hits)
		}
	})

	t.Run("RunShowsNoValue", func(t *testing.T) {
		cli("", "run", "list", "--project", "e2e")
		cli("", "task", "list", "--project", "e2e", "--json")
		cli("", "audit", "list")
	})

	t.Run("WrongKeyFileIsAClearError", func(t *testing.T) {
		other := filepath.Join(c.dir, "other.key")
		c.mustCLI("env", "key-init", "--out", other)
		loose := filepath.Join(c.dir, "loose.key")
		data, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(loose, data, 0o640); err != nil {
			t.Fatal(err)
		}
		for _, k := range []struct{ file, says string }{
			{other, "is not a key this database's env values were encrypted with"},
			{filepath.Join(c.dir, "missing.key"), "does not exist"},
			{loose, "readable or writable by group or others"},
		} {
			out, err := c.serveOnce(k.file)
			if err == nil || !strings.Contains(out, k.file) || !strings.Contains(out, k.says) {
				t.Errorf("serve with %s: %v\n%s", k.file, err, out)
			}
		}
		out, err := c.serveOnce("")
		if err == nil || !strings.Contains(out, "--secret-key-file") {
			t.Errorf("serve without a key file on a store with values: %v\n%s", err, out)
		}
	})

	t.Run("NoValueAtRest", func(t *testing.T) {
		dump, err := c.db.Cluster.Dump(c.db.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(dump, []byte("env_entries")) {
			t.Fatal("the dump has no env_entries table: not a dump of this database")
		}
		for _, s := range secrets {
			if bytes.Contains(dump, []byte(s)) {
				t.Errorf("pg_dump holds a value")
			}
		}
		c.scalar(`SELECT count(*) FROM (SELECT pg_switch_wal()) s`) // the WAL written so far is in files
		if hits := grepTree(t, c.db.Cluster.WALDir(), secrets); len(hits) > 0 {
			t.Errorf("PostgreSQL's WAL holds a value: %v", hits)
		}
		logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
		if len(logs) < 2 {
			t.Fatalf("found %d logs", len(logs))
		}
		for _, l := range logs {
			if hits := grepTree(t, l, secrets); len(hits) > 0 {
				t.Errorf("log %s holds a value", filepath.Base(l))
			}
		}
		for _, s := range secrets {
			if strings.Contains(answers.String(), s) {
				t.Errorf("an API answer other than reveal holds a value")
			}
		}
		// An export with values does return them (and audits).
		if out := c.mustCLI("env", "export", "--project", "e2e", "--format", "lines", "--values"); !strings.Contains(out, "A="+s1) {
			t.Errorf("export with values does not hold A's value")
		}
		if n := c.scalar(`SELECT count(*) FROM ql3.audit_log WHERE action = 'env.export'`); n < 1 {
			t.Errorf("%d env.export audit lines", n)
		}
	})

	t.Run("StartOverhead", func(t *testing.T) { startOverhead(t, c.with(t)) })
}

// startOverhead reports (never asserts) how long a remote Run takes from
// its claim (the lease, whose statement also pins the entries) to its
// process's start — the offer built and opened, sent, decoded, the
// process spawned — with 1,000 enabled entries in its project and with
// none.
func startOverhead(t *testing.T, c *cluster) {
	var lines strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&lines, "BENCH_%04d=value-%04d-%s\n", i, i, strings.Repeat("v", 24))
	}
	median := map[string]time.Duration{}
	for _, p := range []struct {
		name  string
		lines string
	}{{"bench-none", ""}, {"bench-1000", lines.String()}} {
		c.mustCLI("project", "create", "--name", p.name)
		if p.lines != "" {
			c.cliStdin(p.lines, "env", "import", "--project", p.name)
		}
		spec := filepath.Join(c.dir, p.name+".json")
		if err := os.WriteFile(spec, []byte(`{"kind":"qinglong/command@v1","argv":{"file":"/bin/true"},"concurrency":"allow"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		var task struct{ ID string }
		c.mustJSON(&task, "task", "create", "--project", p.name, "--name", "start", "--spec-file", spec)
		var took []time.Duration
		for range 7 {
			run := c.runNow(task.ID)
			c.eventually(30*time.Second, "the run succeeded", func() bool { return c.runStatus(run) == "succeeded" })
			ms := c.scalar(`SELECT a.started_at_ms - l.leased_at_ms FROM ql3.attempts a JOIN ql3.run_leases l USING (attempt_id) WHERE a.run_id = $1`, run)
			took = append(took, time.Duration(ms)*time.Millisecond)
		}
		slices.Sort(took)
		median[p.name] = took[len(took)/2]
		t.Logf("%s: claimed → process started, 7 runs: median %v, min %v, max %v", p.name, took[len(took)/2], took[0], took[len(took)-1])
	}
	t.Logf("start overhead of 1,000 enabled entries: %v (median with) − %v (median without)", median["bench-1000"], median["bench-none"])
}

// secret is a random value that names what it is for.
func secret(t *testing.T, what string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return what + "-" + hex.EncodeToString(b)
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func touch(t *testing.T, path string) {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// addJSON adds an entry (value on stdin) and decodes the answer.
func addJSON(t *testing.T, c *cluster, out any, value, name, remarks string) {
	t.Helper()
	text := c.cliStdin(value, "env", "add", "--project", "e2e", "--name", name, "--remarks", remarks, "--json")
	if err := json.Unmarshal([]byte(text), out); err != nil {
		t.Fatalf("env add answer: %v", err)
	}
}

// cliStdin runs ql3-control against the live admin API with stdin.
func (c *cluster) cliStdin(stdin string, args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBin, args...)
	cmd.Env = append(os.Environ(), "QL3_TOKEN="+c.token, "QL3_SERVER=http://"+c.liveControl().admin)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("ql3-control %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// serveOnce starts a replica with keyFile ("" for none) that is expected
// to refuse to start; it returns what it printed.
func (c *cluster) serveOnce(keyFile string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"serve", "--listen", freeAddr(c.t), "--no-scheduler",
		"--admin-dsn", c.dsn(postgres.RoleAdmin), "--runtime-dsn", c.dsn(postgres.RoleRuntime)}
	if keyFile != "" {
		args = append(args, "--secret-key-file", keyFile)
	}
	cmd := exec.CommandContext(ctx, ctlBin, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runTask publishes spec as task name, runs it and waits for success.
func (c *cluster) runTask(t *testing.T, name, spec string) string {
	t.Helper()
	run := c.runNow(c.createTask(name, spec))
	c.eventually(60*time.Second, name+" succeeded", func() bool {
		switch c.runStatus(run) {
		case "failed", "cancelled", "timed_out":
			t.Fatalf("%s ended %s", name, c.runStatus(run))
		}
		return c.runStatus(run) == "succeeded"
	})
	return run
}

// storedLog is a run's stored stdout, as the database keeps it.
func (c *cluster) storedLog(run string) string {
	return c.text(`SELECT coalesce(string_agg(convert_from(l.data, 'UTF8'), '' ORDER BY l.offset_bytes), '')
		FROM ql3.run_log_chunks l WHERE l.run_id = $1 AND l.stream = 'stdout'`, run)
}

// grepTree lists the files under root (or root itself) holding any of
// the values.
func grepTree(t *testing.T, root string, values []string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, v := range values {
			if bytes.Contains(data, []byte(v)) {
				hits = append(hits, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("grep %s: %v", root, err)
	}
	return hits
}
