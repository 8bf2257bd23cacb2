package notify_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
)

// env is one store with a fake clock, an unlocked env key and a deliverer.
type env struct {
	t     testing.TB
	ctx   context.Context
	dir   string
	clk   *clock.Fake
	store *sqlite.Store
	kek   *envcrypt.KEK
	d     *notify.Deliverer
	task  edge.Task
}

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), dir: t.TempDir(), clk: clock.NewFake(start)}
	kek, err := envcrypt.CreateKeyFile(filepath.Join(e.dir, "env.key"))
	if err != nil {
		t.Fatal(err)
	}
	e.kek = kek
	e.open()
	e.task, err = e.store.CreateTask(e.ctx, edge.NewTask{Name: "checkin", Enabled: true,
		Spec: spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "exit 3"}}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// open (re)opens the database, as a restarted edge does.
func (e *env) open() {
	e.t.Helper()
	s, err := sqlite.Open(e.ctx, filepath.Join(e.dir, "ql3-edge.db"), sqlite.Options{Clock: e.clk})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.UnlockEnv(e.ctx, e.kek); err != nil {
		e.t.Fatal(err)
	}
	e.store = s
	e.t.Cleanup(func() { s.Close() })
	e.d = e.deliverer(&notify.Sender{Timeout: 5 * time.Second})
}

func (e *env) deliverer(s *notify.Sender) *notify.Deliverer {
	d, err := notify.New(notify.Config{Store: e.store, Feed: e.store, Runs: e.store, Sender: s, Clock: e.clk,
		Jitter: func() float64 { return 0 }, GiveUpAfter: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) channel(name string, st channel.Settings) notify.Channel {
	e.t.Helper()
	c, err := e.store.CreateChannel(e.ctx, notify.ChannelInput{Name: name, Enabled: true, Settings: st}, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) rule(name string, r notify.RuleInput) notify.Rule {
	e.t.Helper()
	r.Name = name
	r.Rule.Enabled = true
	out, err := e.store.CreateRule(e.ctx, r, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// finish runs the task once: admitted, claimed, running, then ended with
// status (and exit code 3 when it failed).
func (e *env) finish(status run.AttemptStatus) edge.Run {
	e.t.Helper()
	r := e.startRun()
	res := edge.AttemptResult{Status: status, FinishedAtMs: e.clk.Now().UnixMilli(), NoRetry: true}
	if status == run.AttemptFailed {
		code := 3
		res.ExitCode, res.ErrorClass = &code, run.ErrorProcessExit
	}
	if _, err := e.store.FinishAttempt(e.ctx, edge.AttemptRef{RunID: r.ID, Number: 1}, res); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) startRun() edge.Run {
	e.t.Helper()
	r, _, err := e.store.CreateManualRun(e.ctx, edge.ManualRun{TaskID: e.task.ID})
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.clk.Now().UnixMilli()
	c, err := e.store.ClaimRun(e.ctx, r.ID, r.Version, now)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.MarkAttemptRunning(e.ctx, edge.AttemptRef{RunID: r.ID, Number: c.Attempt.Number},
		edge.AttemptStart{PID: 1, PGID: 1, StartedAtMs: now}); err != nil {
		e.t.Fatal(err)
	}
	return c.Run
}

func (e *env) step() {
	e.t.Helper()
	if err := e.d.Step(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deliveries(f notify.DeliveryFilter) []notify.Delivery {
	e.t.Helper()
	if f.Limit == 0 {
		f.Limit = notify.MaxPage
	}
	out, err := e.store.ListDeliveries(e.ctx, f)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// hits records what a fake receiver got.
type hits struct {
	mu   sync.Mutex
	reqs []got
}

type got struct {
	Method, Path, RawQuery string
	Header                 map[string][]string
	Body                   []byte
}

func (h *hits) add(g got) {
	h.mu.Lock()
	h.reqs = append(h.reqs, g)
	h.mu.Unlock()
}

func (h *hits) all() []got {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]got(nil), h.reqs...)
}
