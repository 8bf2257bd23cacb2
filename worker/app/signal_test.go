package app

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/scripts/testio"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/executor"
	"github.com/ql3/ql3/worker/internal/fakeingress"
	"github.com/ql3/ql3/worker/journal"
)

// startMain runs Main (the real wiring, real clock, real executor) against
// a fake ingress until the run's process is started; it returns the exit
// channel.
func startMain(t *testing.T, script string) (*fakeingress.Server, chan int, *testio.Buffer, string) {
	t.Helper()
	pki := fakeingress.NewPKI(t, time.Now().Add(-time.Hour))
	srv := fakeingress.New(t, pki, clock.Real{})
	srv.AddRun("app-signal-run", script, 600_000)
	f := pki.WriteIdentity(t, fakeingress.Credential("cred-a"))
	state := t.TempDir() + "/state"
	args := []string{"--ingress-url", srv.URL(), "--credential-file", f.Credential, "--cert-file", f.Cert,
		"--key-file", f.Key, "--ca-file", f.CA, "--state-dir", state,
		"--cadence-ms", "100", "--kill-grace-ms", "500", "--drain-grace-ms", "20000", "--log-level", "debug"}
	out := &testio.Buffer{}
	exit := make(chan int, 1)
	go func() { exit <- Main("test", args, func(string) string { return "" }, out) }()
	// Started means spawned and journaled: the worker sends the running
	// Ack only after both. (The server's "started" state comes earlier,
	// from the starting Ack before the spawn; a SIGTERM then drops the
	// attempt unstarted, which these tests do not exercise.)
	waitFor(t, "the run's process to start", func() bool {
		running := false
		srv.With(func(s *fakeingress.Server) {
			for _, r := range s.Requests() {
				if r.Path == protocol.PathLeaseAck && strings.Contains(string(r.Body), `"phase":"`+string(protocol.AckRunning)+`"`) {
					running = true
				}
			}
		})
		return running
	})
	return srv, exit, out, state
}

// waitFor polls a condition on real processes and a real clock, bounded.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SIGTERM to the real binary wiring with a running task: draining, the task
// completes, its completion is delivered, then offline and exit 0.
func TestSIGTERMDrainsThenOffline(t *testing.T) {
	srv, exit, out, _ := startMain(t, "sleep 1; echo finished")
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-exit:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", out.String())
	}
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	var run fakeingress.Run
	var status protocol.SessionStatus
	srv.With(func(s *fakeingress.Server) { run = *s.Runs()[0]; _, _, status = s.Session() })
	if run.Completion == nil || run.Completion.Status != "succeeded" || string(run.Log) != "finished\n" {
		t.Fatalf("run after the drain: %+v log %q", run.Completion, run.Log)
	}
	if status != protocol.SessionOffline {
		t.Fatalf("session %s, want offline", status)
	}
	if !strings.Contains(out.String(), "draining") {
		t.Fatalf("no draining in the log:\n%s", out.String())
	}
}

// A second signal kills the running task's group and exits 1.
func TestSecondSIGTERMKillsTheTaskAndExits(t *testing.T) {
	_, exit, out, state := startMain(t, "sleep 300 & sleep 300; wait")
	j, err := journal.Open(state, 0, nil)
	if err == nil {
		j.Close()
		t.Fatal("the state dir is not locked by the running worker")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drain to begin", func() bool { return strings.Contains(out.String(), "draining") })
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != ExitFailed {
			t.Fatalf("exit %d, want %d:\n%s", code, ExitFailed, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit after the second SIGTERM:\n%s", out.String())
	}
	// The journal still holds the started record (the next start settles
	// it); its group must be gone now.
	j, err = journal.Open(state, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, _ := j.Entries()
	j.Close()
	if len(entries) != 1 || entries[0].Process == "" {
		t.Fatalf("journal after the forced exit: %+v", entries)
	}
	ident, err := executor.ParseIdentity(entries[0].Process)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task's group to die", func() bool {
		return syscall.Kill(-ident.PGID, 0) == syscall.ESRCH
	})
}
