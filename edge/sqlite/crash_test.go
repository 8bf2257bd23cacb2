package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

const crashEnv = "QL3_SQLITE_CRASH_DB"

// TestMain doubles as the child of TestKill9KeepsClaimAndQueue when
// crashEnv is set, and of TestKill9InsideAGroup when groupCrashEnv is.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
	}
	if v := os.Getenv(groupCrashEnv); v != "" {
		groupCrashChild(v)
	}
	os.Exit(m.Run())
}

// crashChild admits two runs, claims and starts one, then SIGKILLs itself
// without closing the database.
func crashChild(path string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	s, err := Open(ctx, path, Options{Clock: clock.NewFake(t0)})
	if err != nil {
		fail(err)
	}
	sp := shellSpec("sleep 100")
	sp.Concurrency = spec.ConcurrencyAllow
	task, err := s.CreateTask(ctx, edge.NewTask{Name: "crash", Spec: sp, Enabled: true})
	if err != nil {
		fail(err)
	}
	running, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, IdempotencyKey: "running"})
	if err != nil {
		fail(err)
	}
	if _, _, err := s.CreateManualRun(ctx, edge.ManualRun{TaskID: task.ID, IdempotencyKey: "queued"}); err != nil {
		fail(err)
	}
	c, err := s.ClaimRun(ctx, running.ID, running.Version, t0.UnixMilli())
	if err != nil {
		fail(err)
	}
	ref := edge.AttemptRef{RunID: running.ID, Number: c.Attempt.Number}
	if _, err := s.MarkAttemptRunning(ctx, ref, edge.AttemptStart{PID: 4242, PGID: 4242, StartedAtMs: t0.UnixMilli()}); err != nil {
		fail(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // not reached
}

func TestKill9KeepsClaimAndQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	err := cmd.Run()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v", err)
	}
	ctx := context.Background()
	s := openAt(t, path, clock.NewFake(t0))
	inflight, err := s.ListInFlight(ctx)
	if err != nil || len(inflight) != 1 || inflight[0].Attempt.Status != run.AttemptRunning || inflight[0].Attempt.PID != 4242 {
		t.Fatalf("in flight after kill -9: %+v %v", inflight, err)
	}
	f := inflight[0]
	fin, err := s.FinishAttempt(ctx, edge.AttemptRef{RunID: f.Run.ID, Number: f.Attempt.Number},
		edge.AttemptResult{Status: run.AttemptLost, FinishedAtMs: t0.UnixMilli() + 1})
	if err != nil || fin.Run.Status != run.RunLost || fin.Retry != nil {
		t.Fatalf("recover: %+v %v", fin, err)
	}
	due, err := s.ListDueRuns(ctx, t0.UnixMilli()+1, 10)
	if err != nil || len(due) != 1 || due[0].IdempotencyKey != manualKeyPrefix+"queued" || due[0].AttemptCount != 1 {
		t.Fatalf("the run queued before the crash is not due exactly once: %+v %v", due, err)
	}
}

func TestClaimRestoresSynchronousMode(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want int
	}{{"NORMAL", 1}, {"FULL", 2}} {
		t.Run(tc.mode, func(t *testing.T) {
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "edge.db"), Options{Clock: clock.NewFake(t0), Synchronous: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := mustRun(t, s, mustTask(t, s, "a", shellSpec("true")).ID, "")
			if _, err := s.ClaimRun(context.Background(), r.ID, r.Version, t0.UnixMilli()); err != nil {
				t.Fatal(err)
			}
			var got int
			if err := s.writer.QueryRow(`PRAGMA synchronous`).Scan(&got); err != nil || got != tc.want {
				t.Fatalf("synchronous after a claim = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), Options{Synchronous: "OFF"}); err == nil {
		t.Fatal("synchronous=OFF accepted")
	}
}
