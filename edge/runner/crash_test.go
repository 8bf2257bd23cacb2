//go:build linux

package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
	"go.uber.org/goleak"
)

// crashHelperEnv makes the test binary act as a ql3-edge runner process
// over the data directory it names (see TestMain), so a test can kill -9 it.
const crashHelperEnv = "QL3_TEST_RUNNER_HELPER_DIR"

func TestMain(m *testing.M) {
	// The `task` helper of script tests calls this binary (script_test.go).
	if len(os.Args) > 1 && os.Args[1] == scripts.HelperSubcommand {
		os.Exit(scripts.TaskMain(os.Args[2:], os.Stderr))
	}
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		if err := runHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, "runner helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Watchers, executor goroutines and store connections must be gone when
	// the tests end.
	goleak.VerifyTestMain(m)
}

// runHelper runs a runner with the real clock until it is killed.
func runHelper(dir string) error {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "edge.db"), sqlite.Options{})
	if err != nil {
		return err
	}
	x, err := executor.New(executor.Config{WorkRoot: filepath.Join(dir, "work")})
	if err != nil {
		return err
	}
	logs, err := logstore.Open(logstore.Config{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		return err
	}
	r, err := New(Config{Store: store, Executor: x, Logs: logs, StateDir: filepath.Join(dir, "runner"), Clock: clock.Real{}})
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// TestKill9MidAttemptThenRestart kills a real runner process with SIGKILL
// while its attempt runs, then starts a new runner over the same data: the
// interrupted attempt becomes lost, its still-running process is terminated,
// and the one retry (retryOnLost) runs once. Nothing runs twice at once and
// nothing is forgotten.
func TestKill9MidAttemptThenRestart(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newMarker(t)
	script := m.cmd() + `; if [ "$QL3_ATTEMPT" = 1 ]; then echo "$$" > ` + fifo + `; exec sleep 1000; fi; echo second`
	task := e.task("crashy", shellTask(script, func(c *spec.Command) {
		c.Retry = spec.RetryPolicy{MaxAttempts: 2, RetryOnLost: true}
	}))
	r := e.runNow(task.ID)

	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), crashHelperEnv+"="+e.dir)
	var stderr strings.Builder
	helper.Stderr = &stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	helperDone := make(chan struct{})
	go func() { helper.Wait(); close(helperDone) }()

	// The attempt announces its pid through the FIFO once it runs.
	pidCh := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the attempt opens it for writing
		if err != nil {
			pidCh <- ""
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		pidCh <- strings.TrimSpace(line)
	}()
	var attemptPID string
	select {
	case attemptPID = <-pidCh:
	case <-helperDone:
		t.Fatalf("runner helper exited before the attempt started: %s", stderr.String())
	}
	if attemptPID == "" {
		t.Fatal("no pid from the attempt")
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-helperDone

	// The kill may land before or after MarkAttemptRunning committed; the
	// identity file (written right after spawning) covers both.
	if got := e.getRun(r.ID); got.Status != run.RunRunning && got.Status != run.RunDispatching {
		t.Fatalf("after kill -9 the store has run %s, want running or dispatching", got.Status)
	}
	var pid int
	fmt.Sscan(attemptPID, &pid)
	if gone(pid) {
		t.Fatalf("attempt process %d died with the runner; the test needs it alive", pid)
	}

	// Restart: recovery over the same data (fake clock, driven while it polls).
	stopClock := e.driveClock()
	rep, err := e.r.Recover(context.Background())
	stopClock()
	if err != nil {
		t.Fatal(err)
	}
	if rep != (RecoveryReport{InFlight: 1, Terminated: 1, Recorded: 1}) {
		t.Fatalf("recovery = %+v", rep)
	}
	if !gone(pid) {
		t.Fatalf("attempt process %d survived recovery", pid)
	}
	e.start()
	got := e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	if got.AttemptCount != 2 {
		t.Fatalf("run = %+v, want success on attempt 2", got)
	}
	as := e.attempts(r.ID)
	if as[0].Status != run.AttemptLost || as[0].ErrorClass != run.ErrorWorkerLost || as[1].Status != run.AttemptSucceeded {
		t.Fatalf("attempts = %+v", as)
	}
	if lines := m.lines(t); strings.Join(lines, " ") != r.ID+"/1 "+r.ID+"/2" {
		t.Fatalf("executions = %v, want attempt 1 once and attempt 2 once", lines)
	}
	if log := e.readLog(r.ID, 2); log != "second\n" {
		t.Fatalf("attempt 2 log = %q", log)
	}
}
