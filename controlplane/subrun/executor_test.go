package subrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/session"
	"github.com/ql3/ql3/controlplane/subrun"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/subfetch/gittest"
)

type cluster struct {
	*world
	svc  *subrun.Service
	ops  *runops.RunOps
	exec *subrun.Executor
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t)
	runtime := w.db.Pool(t, postgres.RoleRuntime)
	sessions, err := session.NewSessions(w.db.Pool(t, postgres.RoleWorkerIngress), session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := dispatch.NewDispatcher(runtime, dispatch.DispatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := w.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: "ql3-control-subscriptions", TLSIdentity: "ql3-control-subscriptions"})
	if err != nil {
		t.Fatal(err)
	}
	cred, _, err := w.pub.IssueWorkerCredential(ctx, worker.ID)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{world: w, ops: runops.NewRunOps(runtime)}
	c.svc = &subrun.Service{Subs: w.subs, Tasks: w.pub, Runs: c.ops, Puller: w.puller}
	c.exec = &subrun.Executor{Puller: w.puller, Sessions: sessions, Leases: disp,
		Principal: controlplane.Principal{WorkerID: worker.ID, CredentialID: cred.ID}}
	if err := c.exec.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) create(t *testing.T, url string) controlplane.Subscription {
	t.Helper()
	sub, err := c.svc.Create(context.Background(), c.project, subdef.Def{Name: "repo", Slug: "repo", Kind: subdef.Git, URL: url,
		Branch: "main", Schedule: "0 4 * * *", AutoAdd: true, AutoRemove: true, Enabled: true,
		Filter: subplan.Filter{Extensions: []string{".js"}}})
	if err != nil {
		t.Fatal(err)
	}
	if sub.TaskID == "" {
		t.Fatalf("no system task: %+v", sub)
	}
	return sub
}

// pull starts a pull Run and lets the executor run it; it returns the
// Run and its log.
func (c *cluster) pull(t *testing.T, sub controlplane.Subscription, key string) (controlplane.Run, string) {
	t.Helper()
	ctx := context.Background()
	res, err := c.svc.Pull(ctx, sub.ID, key, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.exec.RunOne(ctx)
	if err != nil || !got {
		t.Fatalf("executor: %v %v", got, err)
	}
	return c.run(t, res.RunID)
}

func (c *cluster) run(t *testing.T, id string) (controlplane.Run, string) {
	t.Helper()
	ctx := context.Background()
	r, err := c.pub.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := c.ops.ReadLog(ctx, id, 1, "stdout", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return r, string(lr.Data)
}

// TestPullIsARunOfTheSystemTask: a pull started by hand is a Run of the
// subscription's system task that only the control plane's executor
// claims (an ordinary Run is never offered to it); its log is the pull's;
// a hostile repository fails the Run with the reason in its log and the
// folder keeps its previous version.
func TestPullIsARunOfTheSystemTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCluster(t)
	r := gittest.New(t)
	r.Write(map[string]string{"a.js": "// cron: 0 1 * * *\nconst $ = new Env('A');\n", "README.md": "hi\n"})
	r.Commit("first")
	sub := c.create(t, r.URL())

	// An ordinary Run is not offered to the executor.
	plain, err := c.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: c.project, Name: "plain",
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "true"}}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ops.RunNow(ctx, controlplane.RunNowInput{TaskID: plain.ID, IdempotencyKey: "plain-1", Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.exec.RunOne(ctx); got || err != nil {
		t.Fatalf("the executor claimed an ordinary Run: %v %v", got, err)
	}

	run, log := c.pull(t, sub, "pull-1")
	if run.Status != "succeeded" || run.TaskID != sub.TaskID {
		t.Fatalf("pull Run %+v\n%s", run, log)
	}
	for _, want := range []string{"pulling " + r.URL(), "published repo/: 2 files", "add a.js: task"} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	if got := c.tasks(t); got["repo/a.js"] != "A|0 1 * * *|on" {
		t.Fatalf("tasks %v", got)
	}

	r.LiteralTree([2]string{"100644", "b.js"}, [2]string{"100644", ".git"})
	run, log = c.pull(t, sub, "pull-2")
	if run.Status != "failed" || !strings.Contains(log, `entry ".git" is refused`) {
		t.Fatalf("hostile pull Run %s:\n%s", run.Status, log)
	}
	if _, _, err := c.scripts.ReadScript(ctx, c.project, "repo/b.js"); err == nil {
		t.Fatal("a failed pull published b.js")
	}
	if got := c.read(t, "repo/a.js"); !strings.Contains(got, "Env('A')") {
		t.Fatalf("a.js after the failed pull: %q", got)
	}
}

// TestCancelStopsThePull: cancelling the Run while git fetches stops the
// pull (the cancel arrives with the executor's heartbeat, as a worker's
// would), the Run ends cancelled and nothing is published.
func TestCancelStopsThePull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCluster(t)
	r := gittest.New(t)
	r.Write(map[string]string{"a.js": "// cron: 0 1 * * *\n"})
	r.Commit("first")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A git that announces the fetch and then hangs in it.
	wrapper := filepath.Join(dir, "git")
	script := "#!/bin/sh\nif [ \"$3\" = fetch ]; then echo fetching > '" + fifo + "'; exec sleep 600; fi\nexec git \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c.puller.Git = wrapper
	sub := c.create(t, r.URL())
	res, err := c.svc.Pull(ctx, sub.ID, "pull-1", "test")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.exec.RunOne(ctx)
		done <- err
	}()
	if b, err := os.ReadFile(fifo); err != nil || string(b) != "fetching\n" { // blocks until the fetch started
		t.Fatalf("fifo: %q %v", b, err)
	}
	if _, err := c.ops.CancelRun(ctx, res.RunID, "test"); err != nil {
		t.Fatal(err)
	}
	if err := c.exec.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	run, log := c.run(t, res.RunID)
	if run.Status != "cancelled" || !strings.Contains(log, "cancelled") {
		t.Fatalf("cancelled pull Run %s:\n%s", run.Status, log)
	}
	if _, _, err := c.scripts.ReadScript(ctx, c.project, "repo/a.js"); err == nil {
		t.Fatal("a cancelled pull published a.js")
	}
}
