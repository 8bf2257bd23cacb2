package agent_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/identity"
	"github.com/ql3/ql3/worker/internal/fakeingress"
	"github.com/ql3/ql3/worker/journal"
)

// harness is one worker (agent + journal + client) against the fake
// ingress, on a fake clock.
type harness struct {
	t     *testing.T
	clk   *clock.Fake
	pki   *fakeingress.PKI
	srv   *fakeingress.Server
	files fakeingress.IdentityFiles
	ident *identity.Provider
	cl    *client.Client
	state string
	idle  chan struct{}

	cfg    agent.Config
	runner agent.Runner
	j      *journal.Journal
	a      *agent.Agent
	done   chan error
	cancel context.CancelFunc
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("QL3_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newHarness(t *testing.T, runner agent.Runner) *harness {
	t.Helper()
	clk := clock.NewFake(start)
	pki := fakeingress.NewPKI(t, time.Now().Add(-time.Hour))
	h := &harness{t: t, clk: clk, pki: pki, srv: fakeingress.New(t, pki, clk),
		state: t.TempDir() + "/state", idle: make(chan struct{}, 1), runner: runner}
	h.files = pki.WriteIdentity(t, fakeingress.Credential("cred-a"))
	var err error
	h.ident, err = identity.NewProvider(identity.Paths{Credential: h.files.Credential, Cert: h.files.Cert,
		Key: h.files.Key, CABundle: h.files.CA}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	h.cl, err = client.New(client.Config{BaseURL: h.srv.URL(), Identity: h.ident, Timeout: 5 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.cl.Close)
	h.cfg = agent.Config{
		Capacity: 1, Cadence: time.Second, LogBytes: 1 << 20, KillGrace: 200 * time.Millisecond,
		FenceMargin: 2 * time.Second, DrainGrace: 30 * time.Second,
		Capabilities: placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"shell"}},
		Clock:        clk, Logger: testLogger(t), Rand: rand.New(rand.NewPCG(1, 2)),
		Hooks: agent.Hooks{Idle: func() {
			select {
			case h.idle <- struct{}{}:
			default:
			}
		}},
	}
	return h
}

// start opens the journal (with fault) and runs a new agent.
func (h *harness) start(fault journal.Fault) {
	h.t.Helper()
	j, err := journal.Open(h.state, 0, fault)
	if err != nil {
		h.t.Fatal(err)
	}
	h.j = j
	a, err := agent.New(h.cfg, agent.Deps{Journal: j, Client: h.cl, Runner: h.runner,
		CredentialID: func() (string, error) {
			c, err := h.ident.Credential()
			return c.ID, err
		}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.a = a
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- a.Run(ctx) }()
	h.t.Cleanup(func() { h.stop() })
}

// stop cancels the agent (if running) and closes the journal.
func (h *harness) stop() error {
	if h.a == nil {
		return nil
	}
	h.cancel()
	err := <-h.done
	h.j.Close()
	h.a = nil
	return err
}

// startCrashingAt runs a new agent whose journal fails at step (a simulated
// crash) and drives it until that crash stops it.
func (h *harness) startCrashingAt(step string) {
	h.t.Helper()
	h.start(func(s string) error {
		if s == step {
			return errCrash
		}
		return nil
	})
	h.drive(time.Second, 100, func() bool {
		select {
		case err := <-h.done:
			h.done <- err
			return true
		default:
			return false
		}
	})
	if err, ok := h.exited(); !ok || !errors.Is(err, errCrash) {
		h.t.Fatalf("want the simulated crash at %s, got %v (exited %v)", step, err, ok)
	}
}

// exited returns the agent's result once it stopped by itself.
func (h *harness) exited() (error, bool) {
	select {
	case err := <-h.done:
		h.j.Close()
		h.a = nil
		return err, true
	default:
		return nil, false
	}
}

// drive advances the fake clock by step each time the agent idles, until
// cond holds (checked between steps) or the agent exits; at most max
// steps. It reports whether cond held.
func (h *harness) drive(step time.Duration, max int, cond func() bool) bool {
	h.t.Helper()
	if step < h.cfg.Cadence {
		// A token can be dropped while the loop is woken early; only a step
		// of at least one cadence is sure to fire the newest timer.
		h.t.Fatalf("drive step %s is shorter than the cadence %s", step, h.cfg.Cadence)
	}
	for i := 0; i < max; i++ {
		if cond() {
			return true
		}
		select {
		case <-h.idle:
		case err := <-h.done:
			h.done <- err
			return cond()
		case <-time.After(20 * time.Second):
			h.t.Fatalf("the agent did not come back to its cadence within 20 s (real time)")
		}
		// Every idle token is answered with a step, so the agent's
		// cadence timer (created before the token) always fires.
		h.clk.Advance(step)
	}
	return cond()
}

// srvRun reads one run's fields under the server lock.
func (h *harness) srvRun(id string) (r fakeingress.Run) {
	h.srv.With(func(s *fakeingress.Server) {
		for _, x := range s.Runs() {
			if x.ID == id {
				r = *x
			}
		}
	})
	return r
}

func (h *harness) requestsTo(path string) (out []fakeingress.Request) {
	h.srv.With(func(s *fakeingress.Server) {
		for _, r := range s.Requests() {
			if r.Path == path {
				out = append(out, r)
			}
		}
	})
	return out
}

// fakeRunner counts spawns per attempt; its processes end at once with the
// given output unless hold is set.
type fakeRunner struct {
	mu     sync.Mutex
	spawns map[string]int
	live   map[string]*fakeProc
	output string
	hold   bool
	reaped int
}

func newFakeRunner(output string) *fakeRunner {
	return &fakeRunner{spawns: map[string]int{}, live: map[string]*fakeProc{}, output: output}
}

func (r *fakeRunner) Start(l agent.Launch) (agent.Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := l.RunID + "/" + itoa(l.Attempt)
	r.spawns[key]++
	p := &fakeProc{id: key, done: make(chan struct{})}
	r.live[key] = p
	_, _ = l.Output.Write([]byte(r.output))
	if !r.hold {
		p.end(run.AttemptSucceeded, "")
	}
	return p, nil
}

func (r *fakeRunner) TerminateSurvivors(_ context.Context, runID string, attempt int, _ string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.live[runID+"/"+itoa(attempt)]; ok {
		p.end(run.AttemptLost, "")
		r.reaped++
	}
	return 0, nil
}

func (r *fakeRunner) BootID() string { return "boot-1" }

func (r *fakeRunner) spawnCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.spawns {
		out[k] = v
	}
	return out
}

type fakeProc struct {
	id   string
	once sync.Once
	done chan struct{}
	out  agent.Outcome
}

func (p *fakeProc) end(st run.AttemptStatus, class run.ErrorClass) {
	p.once.Do(func() {
		zero := 0
		p.out = agent.Outcome{Status: st, ErrorClass: class, StartedAt: start, FinishedAt: start.Add(time.Second)}
		if st == run.AttemptSucceeded {
			p.out.ExitCode = &zero
		}
		close(p.done)
	})
}

func (p *fakeProc) Identity() string      { return "1:1:1:boot-1" }
func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) Result() agent.Outcome { <-p.done; return p.out }
func (p *fakeProc) Kill()                 { p.end(run.AttemptLost, run.ErrorWorkerLost) }
func (p *fakeProc) Stop(r agent.StopReason) {
	if r == agent.StopCancel {
		p.end(run.AttemptCancelled, run.ErrorCancelledByUser)
		return
	}
	p.end(run.AttemptLost, run.ErrorWorkerLost)
}

func itoa(n int) string { return strconv.Itoa(n) }

// release ends a held fake process as succeeded.
func (r *fakeRunner) release(key string) {
	r.mu.Lock()
	p := r.live[key]
	r.mu.Unlock()
	if p != nil {
		p.end(run.AttemptSucceeded, "")
	}
}

// driveUntil is drive for conditions that wait on real processes (a group
// that dies, an executor that settles): it keeps stepping until cond holds
// or 15 s of real time passed, however many steps that takes.
func (h *harness) driveUntil(step time.Duration, cond func() bool) bool {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if h.drive(step, 50, cond) {
			return true
		}
		select {
		case err := <-h.done:
			h.done <- err
			return cond()
		default:
		}
	}
	return cond()
}
