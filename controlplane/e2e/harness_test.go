// Package e2e drives a whole ql3 cluster through its real binaries
// (issue #12): ql3-control and ql3-worker are built once per test binary
// (go build, sharing go's build cache), never imported; PostgreSQL is a
// real server of controlplane/pgtest, each replica logs in with the real
// ql3 roles, workers speak TLS 1.3 mTLS to the production ingress with a
// dev PKI made by `ql3-control pki`, and behaviour is driven only through
// the CLI, the admin API and signals. Tables are read to assert, never
// written.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
)

// binaries built by TestMain.
var ctlBin, workerBin string

func TestMain(m *testing.M) {
	// pgtest.Main exits the process, so the binaries live in a directory
	// named by this pid; a later run removes the ones of dead processes.
	base := os.TempDir()
	stale, _ := filepath.Glob(filepath.Join(base, "ql3-e2e-bin-*"))
	for _, d := range stale {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "ql3-e2e-bin-"))
		if err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(d)
		}
	}
	dir := filepath.Join(base, fmt.Sprintf("ql3-e2e-bin-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// build compiles both binaries into dir with the go that runs the tests.
func build(dir string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, b := range []struct{ module, pkg, out string }{
		{"controlplane", "./cmd/ql3-control", "ql3-control"},
		{"worker", "./cmd/ql3-worker", "ql3-worker"},
	} {
		cmd := exec.Command(gobin, "build", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = filepath.Join(root, b.module)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("e2e: building %s: %v\n%s", b.out, err, out)
		}
	}
	ctlBin, workerBin = filepath.Join(dir, "ql3-control"), filepath.Join(dir, "ql3-worker")
	return nil
}

// proc is one running binary with its output in a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig and, for a terminating one, waits up to limit.
func (p *proc) stop(t *testing.T, sig syscall.Signal, limit time.Duration) {
	t.Helper()
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not exit within %v of %v", p.name, limit, sig)
	}
}

func startProc(t *testing.T, name, logPath string, env []string, bin string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a test's ^C does not reach it before the
	// cleanup can stop it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

// cluster is a running ql3 cluster of one test binary.
type cluster struct {
	t        *testing.T
	db       *pgtest.DB
	dir, pki string
	token    string
	pool     *pgxpool.Pool            // superuser, to read tables in assertions
	dsn      func(role string) string // where replicas log in (a promotion moves it)
	*procs                            // shared by every view of the cluster (with)
}

// procs are the cluster's processes.
type procs struct {
	mu       sync.Mutex
	controls []*control
	workers  map[string]*worker
}

// with is a view of the cluster that reports to t (a subtest's helpers
// must fail their own test, from their own goroutine).
func (c *cluster) with(t *testing.T) *cluster {
	v := *c
	v.t = t
	return &v
}

type control struct {
	*proc
	admin, ingress string // host:port
	args           []string
}

type worker struct {
	*proc
	name, stateDir string
	env            []string
}

// Timings of the cluster under test: the protocol's shortest heartbeat
// (5 s); a session lease that leaves the worker one missed heartbeat
// before it fences itself (lease − fence margin 5 s − kill grace 2 s = 13 s
// > 2 heartbeats); a short scheduler claim lease.
const (
	heartbeatMs      = 5000
	sessionLeaseMs   = 20000
	schedulerLeaseMs = 2000
	cancelGraceMs    = 2000
)

func newCluster(t *testing.T) *cluster {
	t.Helper()
	return newClusterOn(t, pgtest.NewDB(t))
}

// newClusterOn is newCluster on a given database.
func newClusterOn(t *testing.T, db *pgtest.DB) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, db: db, dir: dir, pki: filepath.Join(dir, "pki"), procs: &procs{workers: map[string]*worker{}}}
	c.pool = db.Pool(t, "")
	c.dsn = db.DSN
	c.mustCLI("pki", "init", "--dir", c.pki)
	c.mustCLI("pki", "issue-server", "--dir", c.pki, "--host", "127.0.0.1,localhost")
	out := c.mustCLIEnv([]string{"QL3_ADMIN_DSN=" + db.DSN(postgres.RoleAdmin)}, "token", "create", "--name", "e2e")
	c.token = strings.TrimSpace(lastLine(out))
	t.Cleanup(c.stopAll)
	return c
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// cli runs ql3-control with the cluster's first live admin API.
func (c *cluster) cli(args ...string) (string, error) {
	env := []string{"QL3_TOKEN=" + c.token}
	if cp := c.liveControl(); cp != nil {
		env = append(env, "QL3_SERVER=http://"+cp.admin)
	}
	return c.cliEnv(env, args...)
}

func (c *cluster) cliEnv(env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("ql3-control %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (c *cluster) mustCLI(args ...string) string {
	c.t.Helper()
	out, err := c.cli(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *cluster) mustCLIEnv(env []string, args ...string) string {
	c.t.Helper()
	out, err := c.cliEnv(env, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// mustJSON runs a CLI command with --json and decodes its JSON answer.
func (c *cluster) mustJSON(out any, args ...string) {
	c.t.Helper()
	text := c.mustCLI(append(args, "--json")...)
	if err := json.Unmarshal([]byte(text), out); err != nil {
		c.t.Fatalf("ql3-control %s: answer is not JSON: %v: %q", strings.Join(args, " "), err, text)
	}
}

func (c *cluster) liveControl() *control {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cp := range c.controls {
		if cp.alive() {
			return cp
		}
	}
	return nil
}

// startControl starts a ql3-control replica on free ports and waits until
// its admin API and worker ingress listen.
func (c *cluster) startControl(extra ...string) *control {
	c.t.Helper()
	c.mu.Lock()
	n := len(c.controls)
	c.mu.Unlock()
	cp := &control{admin: freeAddr(c.t), ingress: freeAddr(c.t), args: extra}
	cp.proc = c.launchControl(fmt.Sprintf("control-%d", n), cp)
	c.mu.Lock()
	c.controls = append(c.controls, cp)
	c.mu.Unlock()
	return cp
}

// restartControl starts a stopped replica again on its addresses, logging
// in where c.dsn now points.
func (c *cluster) restartControl(cp *control) {
	c.t.Helper()
	cp.proc = c.launchControl(cp.name, cp)
}

func (c *cluster) launchControl(name string, cp *control) *proc {
	c.t.Helper()
	args := []string{"serve", "--listen", cp.admin, "--ingress-listen", cp.ingress,
		"--admin-dsn", c.dsn(postgres.RoleAdmin), "--runtime-dsn", c.dsn(postgres.RoleRuntime),
		"--ingress-dsn", c.dsn(postgres.RoleWorkerIngress),
		"--ingress-tls-cert", filepath.Join(c.pki, "ingress.crt"), "--ingress-tls-key", filepath.Join(c.pki, "ingress.key"),
		"--ingress-client-ca", filepath.Join(c.pki, "ca.crt"),
		"--scheduler-lease-ms", strconv.Itoa(schedulerLeaseMs),
		"--session-heartbeat-ms", strconv.Itoa(heartbeatMs), "--session-lease-ms", strconv.Itoa(sessionLeaseMs),
		"--cancel-grace-ms", strconv.Itoa(cancelGraceMs),
		"--credential-reconcile-ms", "1000", "--log-level", "info"}
	args = append(args, cp.args...)
	log := filepath.Join(c.dir, name+".log")
	admins, ingresses := countLog(log, "admin API listening", cp.admin), countLog(log, "worker ingress listening", cp.ingress)
	p := startProc(c.t, name, log, nil, ctlBin, args...)
	c.waitLog(p, "admin API listening", cp.admin, admins)
	c.waitLog(p, "worker ingress listening", cp.ingress, ingresses)
	return p
}

// freeAddr returns a loopback address with a port free right now (fixed
// addresses let a restarted replica keep its workers' ingress URL).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// countLog counts the JSON log lines of path with msg and addr.
func countLog(path, msg, addr string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg && line.Addr == addr {
			n++
		}
	}
	return n
}

// waitLog waits for one more JSON log line with msg and addr than before
// (a restarted replica appends to the same file).
func (c *cluster) waitLog(p *proc, msg, addr string, before int) {
	c.t.Helper()
	c.eventually(30*time.Second, p.name+": "+msg, func() bool {
		if !p.alive() {
			c.t.Fatalf("%s exited: %v\n%s", p.name, p.err, tailFile(p.log, 4000))
		}
		return countLog(p.log, msg, addr) > before
	})
}

// addWorker issues a certificate and a credential for a new worker,
// registers it bound to its certificate identity and starts it against
// the ingress of cp.
func (c *cluster) addWorker(name string, cp *control, extraEnv ...string) *worker {
	c.t.Helper()
	identity := strings.TrimSpace(c.mustCLI("pki", "issue-worker", "--dir", c.pki, "--name", name))
	c.mustCLI("worker", "register", "--name", name, "--tls-identity", identity)
	wdir := filepath.Join(c.pki, "workers", name)
	c.mustCLI("worker", "issue-credential", "--id", name, "--credential-file", filepath.Join(wdir, "credential"))
	state := filepath.Join(c.dir, name+"-state")
	if err := os.Mkdir(state, 0o700); err != nil {
		c.t.Fatal(err)
	}
	w := &worker{name: name, stateDir: state}
	w.env = append([]string{"QL3_INGRESS_URL=https://" + cp.ingress,
		"QL3_CREDENTIAL_FILE=" + filepath.Join(wdir, "credential"),
		"QL3_CERT_FILE=" + filepath.Join(wdir, "client.crt"), "QL3_KEY_FILE=" + filepath.Join(wdir, "client.key"),
		"QL3_CA_FILE=" + filepath.Join(wdir, "ca.crt"), "QL3_STATE_DIR=" + state, "QL3_PROFILE=node",
		"QL3_HEARTBEAT_MS=" + strconv.Itoa(heartbeatMs), "QL3_KILL_GRACE_MS=2000", "QL3_DRAIN_GRACE_MS=30000",
		"QL3_LOG_LEVEL=info"}, extraEnv...)
	c.startWorkerProc(w)
	c.mu.Lock()
	c.workers[name] = w
	c.mu.Unlock()
	return w
}

func (c *cluster) startWorkerProc(w *worker) {
	w.proc = startProc(c.t, w.name, filepath.Join(c.dir, w.name+".log"), w.env, workerBin)
}

// stopAll stops workers (drain), then replicas; the cluster's database
// goes with pgtest.
func (c *cluster) stopAll() {
	c.mu.Lock()
	ws := make([]*worker, 0, len(c.workers))
	for _, w := range c.workers {
		ws = append(ws, w)
	}
	cps := c.controls
	c.mu.Unlock()
	for _, w := range ws {
		if w.proc != nil && w.alive() {
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, w := range ws {
		if w.proc != nil {
			select {
			case <-w.done:
			case <-time.After(40 * time.Second):
				_ = w.cmd.Process.Kill()
				<-w.done
			}
		}
	}
	for _, cp := range cps {
		if cp.alive() {
			_ = cp.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, cp := range cps {
		select {
		case <-cp.done:
		case <-time.After(20 * time.Second):
			_ = cp.cmd.Process.Kill()
			<-cp.done
		}
	}
	if c.t.Failed() {
		for _, cp := range cps {
			c.t.Logf("%s log tail:\n%s", cp.name, tailFile(cp.log, 3000))
		}
		for _, w := range ws {
			c.t.Logf("%s log tail:\n%s", w.name, tailFile(w.log, 3000))
		}
	}
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// eventually polls cond every 100 ms until it holds or limit passes.
func (c *cluster) eventually(limit time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scalar reads one value from the database.
func (c *cluster) scalar(sql string, args ...any) int64 {
	c.t.Helper()
	var n int64
	if err := c.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		c.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (c *cluster) text(sql string, args ...any) string {
	c.t.Helper()
	var s string
	if err := c.pool.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		c.t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// createTask publishes a command task in project e2e (made on first use)
// and returns its id.
func (c *cluster) createTask(name, spec string) string {
	c.t.Helper()
	if c.scalar(`SELECT count(*) FROM ql3.projects WHERE name = 'e2e'`) == 0 {
		c.mustCLI("project", "create", "--name", "e2e")
	}
	path := filepath.Join(c.dir, name+".json")
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		c.t.Fatal(err)
	}
	var task struct{ ID string }
	c.mustJSON(&task, "task", "create", "--project", "e2e", "--name", name, "--spec-file", path)
	return task.ID
}

// runNow starts a manual run of task and returns the run id.
func (c *cluster) runNow(task string) string {
	c.t.Helper()
	var run struct{ ID string }
	c.mustJSON(&run, "run", "now", "--task", task)
	if run.ID == "" {
		c.t.Fatal("run now answered no id")
	}
	return run.ID
}

func (c *cluster) runStatus(run string) string {
	return c.text(`SELECT status FROM ql3.runs WHERE run_id = $1`, run)
}

// processesMatching lists the pids whose command line contains marker.
// processAlive reports whether pid still runs a command line holding
// marker (a reused pid running something else is not it).
func processAlive(pid int, marker string) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && bytes.Contains(data, []byte(marker))
}

func processesMatching(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(data, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
