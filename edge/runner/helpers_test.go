//go:build linux

package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is one runner over a real SQLite store, a real executor and log store,
// all on one fake clock, in a per-test data directory.
type env struct {
	t     *testing.T
	dir   string
	clock *clock.Fake
	store *sqlite.Store
	exec  *executor.Executor
	logs  *logstore.Store
	r     *Runner

	cancel context.CancelFunc
	done   chan error
}

type envOption func(*executor.Config)

func maxConcurrent(n int) envOption { return func(c *executor.Config) { c.MaxConcurrent = n } }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, clock: clock.NewFake(t0)}
	var err error
	e.store, err = sqlite.Open(context.Background(), filepath.Join(dir, "edge.db"), sqlite.Options{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	e.openRunner(opts...)
	return e
}

// openRunner builds a fresh executor, log store and runner over the same
// data directory and store (a "restart" when called again).
func (e *env) openRunner(opts ...envOption) {
	t := e.t
	t.Helper()
	xcfg := executor.Config{WorkRoot: filepath.Join(e.dir, "work"), Clock: e.clock, KillGrace: 10 * time.Second}
	for _, o := range opts {
		o(&xcfg)
	}
	var err error
	if e.exec, err = executor.New(xcfg); err != nil {
		t.Fatal(err)
	}
	if e.logs, err = logstore.Open(logstore.Config{Dir: filepath.Join(e.dir, "logs")}); err != nil {
		t.Fatal(err)
	}
	e.r, err = New(Config{Store: e.store, Executor: e.exec, Logs: e.logs, StateDir: filepath.Join(e.dir, "runner"), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
}

// start runs the loop in the background; the test's cleanup stops it.
func (e *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	r := e.r
	go func() { e.done <- r.Run(ctx) }()
	e.t.Cleanup(e.stop)
}

// stop ends the loop (shutdown: running attempts are recorded lost) and
// waits for it and for every process goroutine.
func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	if err := <-e.done; err != nil {
		e.t.Errorf("Run: %v", err)
	}
	e.exec.Wait()
}

func shellTask(cmd string, mod func(*spec.Command)) spec.Command {
	c := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: cmd}}.WithDefaults()
	if mod != nil {
		mod(&c)
	}
	return c
}

func (e *env) task(name string, c spec.Command) edge.Task {
	e.t.Helper()
	task, err := e.store.CreateTask(context.Background(), edge.NewTask{Name: name, Spec: c, Enabled: true})
	if err != nil {
		e.t.Fatalf("create task: %v", err)
	}
	return task
}

func (e *env) runNow(taskID string) edge.Run {
	e.t.Helper()
	r, _, err := e.store.CreateManualRun(context.Background(), edge.ManualRun{TaskID: taskID})
	if err != nil {
		e.t.Fatalf("run now: %v", err)
	}
	return r
}

func (e *env) getRun(id string) edge.Run {
	e.t.Helper()
	r, err := e.store.GetRun(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) attempts(runID string) []edge.Attempt {
	e.t.Helper()
	as, err := e.store.ListAttempts(context.Background(), runID)
	if err != nil {
		e.t.Fatal(err)
	}
	return as
}

func (e *env) events(runID string) string {
	e.t.Helper()
	evs, err := e.store.ListRunEvents(context.Background(), runID, 0, edge.MaxPageSize)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = strings.TrimPrefix(string(ev.Type), "run.")
	}
	return strings.Join(out, " ")
}

// waitRun blocks until the run satisfies cond. It wakes on every attempt
// start/end of the runner; there is no sleeping and no wall-clock deadline
// (go test -timeout bounds a hang).
func (e *env) waitRun(id string, what string, cond func(edge.Run) bool) edge.Run {
	e.t.Helper()
	for {
		ch := e.r.changes()
		r := e.getRun(id)
		if cond(r) {
			return r
		}
		select {
		case <-ch:
		case err := <-e.doneOrNil():
			e.t.Fatalf("runner stopped (%v) while waiting for run %s to be %s; it is %s", err, id, what, r.Status)
		}
	}
}

func (e *env) doneOrNil() chan error {
	if e.done == nil {
		return nil
	}
	return e.done
}

func status(s run.RunStatus) func(edge.Run) bool {
	return func(r edge.Run) bool { return r.Status == s }
}

// waitTimers blocks until the fake clock has at least n armed timers.
func (e *env) waitTimers(n int) {
	for {
		ch := e.clock.Changed()
		if e.clock.Waiters() >= n {
			return
		}
		<-ch
	}
}

// readLog returns the whole (small) log of an attempt.
func (e *env) readLog(runID string, attempt int) string {
	e.t.Helper()
	c, err := e.logs.Read(runID, attempt, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(c.Data)
}

// marker is a file that each execution of a task appends one line to, so a
// test can count executions independently of the store.
type marker struct{ path string }

func newMarker(t *testing.T) marker { return marker{filepath.Join(t.TempDir(), "executions")} }

func (m marker) cmd() string { return "echo \"$QL3_RUN_ID/$QL3_ATTEMPT\" >> " + m.path }

func (m marker) lines(t *testing.T) []string {
	data, err := os.ReadFile(m.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// output is a concurrency-safe sink a test can wait on.
type output struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *output) waitContains(s string) {
	for {
		o.mu.Lock()
		ok := strings.Contains(o.b.String(), s)
		ch := o.changed
		o.mu.Unlock()
		if ok {
			return
		}
		<-ch
	}
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// gone reports whether pid no longer runs (absent or a zombie).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || i+2 >= len(data) || data[i+2] == 'Z' || data[i+2] == 'X'
}

// driveClock advances the fake clock in 50 ms steps whenever a timer is
// armed, for code that polls on the clock (orphan termination). The
// returned func stops it and waits for it.
func (e *env) driveClock() func() {
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			ch := e.clock.Changed()
			if e.clock.Waiters() > 0 {
				e.clock.Advance(50 * time.Millisecond)
				continue
			}
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
	}
}
