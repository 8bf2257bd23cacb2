// Package agent is the worker's one control loop (ADR 0018–0020): it opens
// a session, renews it (and the leases of its attempts) with heartbeats,
// pulls offers through the durable pending-pull record, runs them through
// the executor, spools and uploads their logs, delivers completions, fences
// itself when a lease lapses, drains on SIGTERM and reopens a session on
// its own after an outage, replacement or expiry.
//
// Everything runs on one cadence (router 2 s, node 500 ms) in one
// goroutine; requests are serialised over one kept-alive connection. Only
// the fencer runs beside it, so a lease is stopped on time even while the
// loop waits on the network. Journal I/O errors are fatal: the worker
// exits and its supervisor restarts it into restart recovery.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

// Poster sends one request to the ingress (client.Client).
type Poster interface {
	Post(ctx context.Context, path string, body []byte, maxResp int) (client.Response, error)
}

// Deps are the agent's collaborators.
type Deps struct {
	Journal *journal.Journal
	Client  Poster
	Runner  Runner
	// CredentialID reads the id of the credential the next request will
	// present (heartbeats report it so the authority can observe rotation).
	CredentialID func() (string, error)
	// Notify hands attempts sendNotify's loopback URL and token
	// (worker/notifyrelay); nil: scripts' sendNotify only prints.
	Notify NotifyRelay
}

// Agent is one worker process's loop.
type Agent struct {
	cfg        Config
	j          *journal.Journal
	c          Poster
	run        Runner
	credID     func() (string, error)
	log        *slog.Logger
	capsDigest canonjson.Digest
	notify     NotifyRelay // notify.go

	sess             *session
	sessFailures     int
	sessNotBefore    time.Time
	lastGeneration   int64
	pending          *journal.Pending
	pullFailures     int
	pullNotBefore    time.Time
	attempts         map[string]*attempt
	order            []string // offer ids in arrival order
	fence            *fencer
	wake             chan struct{}
	buf              []byte
	drainOnce        sync.Once
	drainCh          chan struct{}
	draining         bool
	drainDeadline    time.Time
	drainFenced      bool
	offline          bool
	transitionFails  int
	transitionAfter  time.Time
	identityWarnedAt string
	shortLeaseWarned bool
	batch            batchMode // lease batches served by the authority (batch.go)
}

// session is the authority's session as this worker last saw it.
type session struct {
	id       string
	gen      int64
	status   protocol.SessionStatus
	interval time.Duration
	nextBeat time.Time
	deadline time.Time // local (monotonic) view of the session lease expiry
	failures int
}

// errJournal marks a fatal journal failure.
type errJournal struct{ err error }

func (e errJournal) Error() string { return "journal: " + e.err.Error() }
func (e errJournal) Unwrap() error { return e.err }

func jerr(err error) error {
	if err == nil {
		return nil
	}
	return errJournal{err}
}

// New builds an agent. cfg.Capabilities must be valid.
func New(cfg Config, d Deps) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if d.Journal == nil || d.Client == nil || d.Runner == nil || d.CredentialID == nil {
		return nil, errors.New("agent: journal, client, runner and credential reader are required")
	}
	digest, err := cfg.Capabilities.Digest()
	if err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	cfg.Capabilities = cfg.Capabilities.Normalize()
	a := &Agent{
		cfg: cfg, j: d.Journal, c: d.Client, run: d.Runner, credID: d.CredentialID,
		log: cfg.Logger, capsDigest: digest,
		attempts: make(map[string]*attempt),
		wake:     make(chan struct{}, 1),
		buf:      make([]byte, protocol.MaxLogChunkBytes),
		drainCh:  make(chan struct{}),
	}
	a.fence = newFencer(cfg.Clock, a.poke)
	a.notify = d.Notify
	return a, nil
}

// poke wakes the loop before its cadence timer (a process ended, a fence
// fired).
func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Drain asks the agent to stop pulling, let running work finish within the
// drain grace, settle every record and go offline; Run then returns nil.
// Safe to call more than once and from any goroutine.
func (a *Agent) Drain() { a.drainOnce.Do(func() { close(a.drainCh) }) }

// Run recovers the journal and loops until the session is offline after a
// Drain (nil), ctx is cancelled (the second signal: every process group is
// killed, ctx.Err()) or the journal fails (that error).
func (a *Agent) Run(ctx context.Context) error {
	fctx, stopFencer := context.WithCancel(context.Background())
	fencerDone := make(chan struct{})
	go func() { defer close(fencerDone); a.fence.run(fctx) }()
	defer func() { stopFencer(); <-fencerDone }()

	if err := a.recover(ctx); err != nil {
		return err
	}
	drainCh := a.drainCh
	for {
		if ctx.Err() != nil {
			a.killAll()
			return ctx.Err()
		}
		select {
		case <-drainCh:
			drainCh = nil
			a.startDrain()
		default:
		}
		if err := a.step(ctx); err != nil {
			if ctx.Err() != nil {
				a.killAll()
				return ctx.Err()
			}
			a.log.Error("journal failure; stopping (restart recovery will settle it)", "err", err)
			return err
		}
		if a.offline {
			a.log.Info("session offline; stopped")
			return nil
		}
		select {
		case <-a.wake:
			continue // woken during the pass (an offer accepted, a process ended): no wait
		default:
		}
		wait := a.loopWait()
		t := a.cfg.Clock.NewTimer(wait)
		if a.cfg.Hooks.IdleFor != nil {
			a.cfg.Hooks.IdleFor(wait)
		}
		if a.cfg.Hooks.Idle != nil {
			a.cfg.Hooks.Idle()
		}
		select {
		case <-ctx.Done():
			t.Stop()
		case <-drainCh:
			t.Stop()
		case <-a.wake:
			t.Stop()
		case <-t.C():
		}
	}
}

func (a *Agent) startDrain() {
	if a.draining {
		return
	}
	a.draining = true
	a.drainDeadline = a.cfg.Clock.Now().Add(a.cfg.DrainGrace)
	a.log.Info("draining: no more pulls; running work may finish", "grace", a.cfg.DrainGrace.String(), "running", a.liveProcesses())
}

// step is one pass of the loop.
func (a *Agent) step(ctx context.Context) error {
	a.fence.check(a.cfg.Clock.Now())
	a.collectFenced()
	if err := a.reap(); err != nil {
		return err
	}
	a.sessionStep(ctx)
	if err := a.leaseBatchStep(ctx); err != nil {
		return err
	}
	if err := a.attemptSteps(ctx); err != nil {
		return err
	}
	if err := a.drainStep(ctx); err != nil {
		return err
	}
	return a.pullStep(ctx)
}

// killAll SIGKILLs every process group this agent started (second signal).
func (a *Agent) killAll() {
	for _, at := range a.attempts {
		if at.proc != nil {
			at.proc.Kill()
		}
	}
	for _, at := range a.attempts {
		if at.proc != nil {
			<-at.proc.Done()
		}
	}
}

// liveProcesses counts attempts whose process is still running.
func (a *Agent) liveProcesses() int {
	n := 0
	for _, at := range a.attempts {
		if at.alive() {
			n++
		}
	}
	return n
}

// sortedAttempts returns the attempts in arrival order.
func (a *Agent) sortedAttempts() []*attempt {
	out := make([]*attempt, 0, len(a.order))
	for _, id := range a.order {
		if at, ok := a.attempts[id]; ok {
			out = append(out, at)
		}
	}
	return out
}

func (a *Agent) addAttempt(at *attempt) {
	if _, ok := a.attempts[at.e.OfferID]; !ok {
		a.order = append(a.order, at.e.OfferID)
	}
	a.attempts[at.e.OfferID] = at
}

func (a *Agent) removeAttempt(id string) {
	if at, ok := a.attempts[id]; ok && at.sp != nil {
		at.sp.close()
	} else if ok {
		_ = os.Remove(a.j.SpoolPath(id) + tailSuffix) // a tail ring a crash left behind
	}
	if at, ok := a.attempts[id]; ok {
		at.releaseNotify(a.notify)
	}
	delete(a.attempts, id)
	a.fence.remove(id)
	for i, v := range a.order {
		if v == id {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
}

// post sends a body and logs identity-file refusals once per distinct
// message (nothing was sent then).
func (a *Agent) post(ctx context.Context, path string, body []byte, max int) (client.Response, time.Time, error) {
	sent := a.cfg.Clock.Now()
	resp, err := a.c.Post(ctx, path, body, max)
	if err != nil && !client.IsUnknown(err) && client.StatusOf(err) == 0 {
		if msg := err.Error(); msg != a.identityWarnedAt {
			a.identityWarnedAt = msg
			a.log.Error("identity unusable; nothing sent", "err", err)
		}
		return resp, sent, &client.UnknownError{Err: err}
	}
	return resp, sent, err
}

// remaining turns an authority expiry into a local duration, measured from
// the moment the request was sent (the earliest the authority can have
// stamped it): expiry minus the answer's Date, less a second for Date's
// resolution. Without a usable Date the fallback is used.
func remaining(h http.Header, expiresAtMs int64, fallback time.Duration) time.Duration {
	d, err := http.ParseTime(h.Get("Date"))
	if err != nil || expiresAtMs <= 0 {
		return fallback
	}
	r := time.Duration(expiresAtMs-d.UnixMilli())*time.Millisecond - time.Second
	return max(0, min(r, 10*time.Minute))
}
